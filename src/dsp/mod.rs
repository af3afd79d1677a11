//! CPU algorithms, one file per family. Each has a plain reference version (used by tests) and
//! the fast version the application runs.

pub mod aeeg;
pub mod biharmonic;
pub mod blink;
pub mod cwt;
pub mod decimate;
pub mod epochs;
pub mod filter;
pub mod hermite;
pub mod hrv;
pub mod ica;
pub mod montage;
pub mod qrs;
pub mod resample_poly;
pub mod sleep;
pub mod spectrum;
pub mod spline;
pub mod stats;
pub mod xapen;
