//! ede: a viewer and GPU analyzer for physiological recordings (EEG, MEG, ECG).
//!
//! The binary, the tests and the benchmarks all go through this library: `recording` reads
//! files into one model, `dsp` holds the CPU algorithms, `gpu` the compute kernels, `analysis`
//! the jobs the GUI and the CLI run, `app` the egui interface and `cli` the subcommands.

pub mod analysis;
pub mod app;
pub mod cli;
pub mod dsp;
pub mod gpu;
pub mod recording;

/// ede's version. It is set in one place, `[workspace.package]` in `Cargo.toml`, by the rule in
/// `docs/PACKAGING.md`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The commit this build is from, with its date (`build.rs`): "unknown" outside a checkout or
/// source distribution.
pub const COMMIT: &str = env!("EDE_COMMIT");
/// What `ede --version` prints after the name.
pub const VERSION_WITH_COMMIT: &str =
    concat!(env!("CARGO_PKG_VERSION"), " (", env!("EDE_COMMIT"), ")");
