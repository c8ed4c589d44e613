//! The one error type of user configuration: the path of the offending field and what is wrong with it,
//! so every layer (engine configs, the scheme registry, run preparation, the Python front) reports
//! `schemes[0].params.min_rto: ...` the same way and nests paths instead of gluing strings.

use std::fmt;

/// A field of a configuration and why its value is rejected. The path is relative to whatever the
/// caller handed over; callers nest it with [`ConfigError::at`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// Dotted path with list indexes, e.g. `schemes[1].params.thresholds`; empty for the whole input.
    pub path: String,
    pub reason: String,
}

impl ConfigError {
    pub fn new(path: impl Into<String>, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            path: path.into(),
            reason: reason.into(),
        }
    }

    /// The same error seen from `outer`, the path of the table this one's path is relative to.
    #[must_use]
    pub fn at(mut self, outer: &str) -> ConfigError {
        self.path = join(outer, &self.path);
        self
    }
}

/// `outer` + `inner`: `a` + `b` = `a.b`, `a` + `[0].b` = `a[0].b`, either empty = the other.
pub fn join(outer: &str, inner: &str) -> String {
    match (outer.is_empty(), inner.is_empty()) {
        (true, _) => inner.to_string(),
        (false, true) => outer.to_string(),
        (false, false) if inner.starts_with('[') => format!("{outer}{inner}"),
        (false, false) => format!("{outer}.{inner}"),
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "{}: {}", self.path, self.reason)
        }
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_nest() {
        let e = ConfigError::new("alpha", "must be >= 0")
            .at("shim")
            .at("schemes[2]");
        assert_eq!(e.path, "schemes[2].shim.alpha");
        assert_eq!(e.to_string(), "schemes[2].shim.alpha: must be >= 0");
        assert_eq!(ConfigError::new("[1].k", "x").at("faults").path, "faults[1].k");
        assert_eq!(ConfigError::new("", "bad").at("topology").path, "topology");
    }
}
