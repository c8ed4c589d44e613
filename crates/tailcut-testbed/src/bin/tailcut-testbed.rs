//! `tailcut-testbed`: real Linux hosts through an emulated fabric (subcommands: `command.rs`).

use std::process::ExitCode;
use tailcut_testbed::SelfCommand;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let me = match SelfCommand::current_exe() {
        Ok(me) => me,
        Err(e) => {
            eprintln!("tailcut-testbed: {e}");
            return ExitCode::FAILURE;
        }
    };
    ExitCode::from(tailcut_testbed::command::main(&args, &me))
}
