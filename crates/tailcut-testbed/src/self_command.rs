//! How the testbed starts itself inside a host (the workload agent): the `tailcut-testbed` binary,
//! or, from the Python package, the interpreter running `-m tailcut.native testbed`. The wheel ships
//! no separate binary: its extension module holds the testbed, so `pip install tailcut` alone gives
//! every real-network tool, and an agent must then be started through Python.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

/// A program and the arguments that make it the `tailcut-testbed` command; a subcommand follows.
#[derive(Clone, Debug)]
pub struct SelfCommand {
    program: PathBuf,
    prefix: Vec<OsString>,
}

impl SelfCommand {
    /// The `tailcut-testbed` binary at `path`.
    pub fn binary(path: impl Into<PathBuf>) -> Self {
        Self {
            program: path.into(),
            prefix: Vec::new(),
        }
    }

    /// `program prefix... SUBCOMMAND`, e.g. `python -m tailcut.native testbed agent`.
    pub fn with_prefix(program: impl Into<PathBuf>, prefix: Vec<OsString>) -> Self {
        Self {
            program: program.into(),
            prefix,
        }
    }

    /// This process's own executable (the `tailcut-testbed` binary running now).
    pub fn current_exe() -> Result<Self, String> {
        std::env::current_exe()
            .map(Self::binary)
            .map_err(|e| format!("cannot find the agent binary: {e}"))
    }

    /// The command that runs `subcommand` of the testbed.
    pub fn command(&self, subcommand: &str) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.prefix).arg(subcommand);
        cmd
    }
}
