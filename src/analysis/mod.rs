//! The job layer: parameters, a backend, progress and cancellation in; serializable results
//! out. The GUI and the CLI call this, never `dsp` or `gpu` directly.

pub mod blink;
pub mod cwt;
pub mod group;
pub mod heart;
pub mod hermite;
pub mod live;
pub mod trend;
pub mod xapen;

use serde::{Deserialize, Serialize};

/// Where an analysis runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Gpu,
    Cpu,
}
