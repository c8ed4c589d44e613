//! File paths inside an experiment file resolve against that file's folder, so a file that names its
//! neighbours (a topology file, a CDF, a flow file) runs from any working directory. The Python front anchors the
//! same fields (`python/tailcut/paths.py`, which lists them); an experiment built in code or parsed from
//! text keeps its paths as given, relative to the working directory.

use crate::config::Experiment;
use crate::fault::FaultConfig;
use crate::topo::TopologyConfig;
use crate::workload::{Pattern, BUILTIN_FLOW_SIZE_CDFS};
use std::path::Path;

/// The loss-rate distribution the core ships (`faults[].rates`); any other value is a file.
const BUILTIN_LOSS_RATES: &str = "fuso-loss";

fn anchor(value: &mut String, folder: &Path) {
    if !value.is_empty() && Path::new(value.as_str()).is_relative() {
        *value = folder.join(value.as_str()).display().to_string();
    }
}

/// Rewrites every relative file path of `exp` to one under `folder` (builtin names are left alone).
pub fn anchor_paths(exp: &mut Experiment, folder: &Path) {
    if let TopologyConfig::File(file) = &mut exp.topology {
        anchor(&mut file.path, folder);
    }
    for component in &mut exp.workload {
        if let Pattern::ConnectionMatrix { path } | Pattern::FlowCsv { path } = &mut component.pattern {
            anchor(path, folder);
        }
        if let Some(cdf) = &mut component.cdf {
            if !BUILTIN_FLOW_SIZE_CDFS.iter().any(|(name, _)| name == cdf) {
                anchor(cdf, folder);
            }
        }
    }
    for fault in &mut exp.faults {
        if let FaultConfig::RandomLossyLinks { rates, .. } = fault {
            if rates != BUILTIN_LOSS_RATES {
                anchor(rates, folder);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_move_under_the_folder_and_builtins_stay() {
        let mut exp = crate::api::parse_toml(
            r#"
            name = "x"
            topology = { kind = "file", path = "topo.toml" }
            faults = [{ kind = "random_lossy_links", fraction = 0.1, tiers = [1], rates = "r.cdf" },
                      { kind = "random_lossy_links", fraction = 0.1, tiers = [1] }]
            workload = [{ name = "a", pattern = { kind = "all_to_all" }, cdf = "sizes.cdf" },
                        { name = "b", pattern = { kind = "all_to_all" }, cdf = "websearch" },
                        { name = "c", pattern = { kind = "all_to_all" }, cdf = "/abs/s.cdf" },
                        { name = "d", pattern = { kind = "connection_matrix", path = "m.cm" } },
                        { name = "e", pattern = { kind = "flow_csv", path = "f.csv" } }]
            schemes = [{ name = "tcp", transport = "tcp" }]
            "#,
        )
        .unwrap();
        anchor_paths(&mut exp, Path::new("/exp"));
        let TopologyConfig::File(file) = &exp.topology else {
            panic!("file topology")
        };
        assert_eq!(file.path, "/exp/topo.toml");
        let cdfs: Vec<_> = exp.workload.iter().filter_map(|w| w.cdf.clone()).collect();
        assert_eq!(cdfs, ["/exp/sizes.cdf", "websearch", "/abs/s.cdf"]);
        let files: Vec<_> = exp
            .workload
            .iter()
            .filter_map(|w| match &w.pattern {
                Pattern::ConnectionMatrix { path } | Pattern::FlowCsv { path } => Some(path.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(files, ["/exp/m.cm", "/exp/f.csv"]);
        let rates: Vec<_> = exp
            .faults
            .iter()
            .map(|f| match f {
                FaultConfig::RandomLossyLinks { rates, .. } => rates.clone(),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(rates, ["/exp/r.cdf", "fuso-loss"]);
    }
}
