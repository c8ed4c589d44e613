//! Tests of the workload generators.
