//! `ede`: argument parsing only; the GUI or a CLI subcommand does the work.

use clap::Parser;
use ede::cli::{Cli, Command};

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Some(Command::Info(args)) => ede::cli::info::run(args),
        Some(Command::Export(args)) => ede::cli::export::run(args),
        Some(Command::Bench(cmd)) => ede::cli::bench::run(cmd),
        None => ede::app::run(cli.gui.clone()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ede: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
