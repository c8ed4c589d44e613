//! tailcut simulator
