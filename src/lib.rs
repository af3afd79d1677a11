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
