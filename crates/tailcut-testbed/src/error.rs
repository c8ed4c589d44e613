//! Why a testbed did not run: its configuration (an experiment file's field, a `[testbed]` key, a
//! flag), or this machine (namespaces, TUN devices, agent processes, BPF programs, output files).
//! The two are told apart so that a caller can say "fix the file" or "fix the machine"; only the
//! configuration has a field to name.

use tailcut_proto::ConfigError;

#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    /// The configuration is invalid or asks for what a testbed cannot run; the error names the field.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// A field of the experiment file `file` (the command line names the file, the error the field).
    #[error("{file}: {error}")]
    InFile { file: String, error: ConfigError },
    /// The machine could not set up or run it: the operating system's message, with what was being
    /// done.
    #[error("{0}")]
    Run(String),
}

/// The operating-system helpers (namespaces, BPF loaders, pcap files) report plain messages; they are
/// never about the configuration, which is checked before anything is set up.
impl From<String> for TestbedError {
    fn from(m: String) -> TestbedError {
        TestbedError::Run(m)
    }
}

impl From<&str> for TestbedError {
    fn from(m: &str) -> TestbedError {
        TestbedError::Run(m.to_string())
    }
}

impl TestbedError {
    /// This error, of a run of the experiment file `file`: configuration errors name the file before
    /// the field, and a run's failure says which file it was running.
    pub fn in_file(self, file: &str) -> TestbedError {
        match self {
            TestbedError::Config(error) => TestbedError::InFile {
                file: file.to_string(),
                error,
            },
            TestbedError::Run(m) => TestbedError::Run(format!("{file}: {m}")),
            e @ TestbedError::InFile { .. } => e,
        }
    }

    /// The configuration error, if it is one.
    pub fn config(&self) -> Option<&ConfigError> {
        match self {
            TestbedError::Config(e) | TestbedError::InFile { error: e, .. } => Some(e),
            TestbedError::Run(_) => None,
        }
    }
}
