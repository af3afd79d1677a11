//! `ede`: argument parsing only; the GUI or a CLI subcommand does the work.

use clap::Parser;
use ede::cli::{Cli, Command};

// glibc's malloc hands the frame's large vertex buffers back to the kernel and then faults
// fresh zeroed pages in on the next frame, which doubled the browser's frame time.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Some(Command::Info(args)) => ede::cli::info::run(args),
        Some(Command::Export(args)) => ede::cli::export::run(args),
        Some(Command::Psd(args)) => ede::cli::psd::run(args),
        Some(Command::Sleep(args)) => ede::cli::sleep::run(args),
        Some(Command::Hrv(args)) => ede::cli::hrv::run(args),
        Some(Command::Trend(args)) => ede::cli::trend::run(args),
        Some(Command::Xapen(args)) => ede::cli::xapen::run(args),
        Some(Command::Cwt(args)) => ede::cli::cwt::run(args),
        Some(Command::Hermite(args)) => ede::cli::hermite::run(args),
        Some(Command::Deblink(args)) => ede::cli::deblink::run(args),
        Some(Command::Live(args)) => ede::cli::live::run(args),
        Some(Command::Stream(args)) => ede::cli::stream::run(args),
        Some(Command::Blinks(cmd)) => ede::cli::blinks::run(cmd),
        Some(Command::Group(args)) => ede::cli::group::run(args),
        Some(Command::Bench(cmd)) => ede::cli::bench::run(cmd),
        None => cli
            .gui
            .start_options()
            .map_err(anyhow::Error::msg)
            .and_then(ede::app::run),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ede: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
