//! `ede bench io --files ...`: how long a real file takes from nothing to its first page
//! drawn (opening it, decoding the page, one egui pass of the whole window and its
//! tessellation), the file in the page cache: what a user waits for after choosing it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use eframe::egui;
use serde::Serialize;

use super::Stats;
use super::io::run_frame;
use crate::app::{EdeApp, Settings};

#[derive(Debug, Serialize)]
pub(super) struct FirstPage {
    file: String,
    format: String,
    channels: usize,
    fs: f64,
    duration_s: f64,
    /// Opening alone (headers, events).
    open_s: Stats,
    /// Opening and drawing the first page: the app made for the file, one whole frame.
    first_page_s: Stats,
}

/// Times `path` `runs` times (after one run that warms the page cache).
pub(super) fn measure(path: &Path, runs: usize) -> anyhow::Result<FirstPage> {
    let options = crate::recording::OpenOptions::default();
    let rec = crate::recording::bids::open_file(path, &options)?;
    let size = egui::vec2(1600.0, 1000.0);
    let mut open = Vec::new();
    let mut first = Vec::new();
    for k in 0..=runs {
        let t = Instant::now();
        let opened = crate::recording::bids::open_file(path, &options)?;
        let open_s = t.elapsed().as_secs_f64();
        drop(opened);
        let ctx = egui::Context::default();
        let t = Instant::now();
        let mut app = EdeApp::new(Some(path.to_path_buf()), None, Settings::default(), None);
        let _ = run_frame(&ctx, &mut app, size);
        let first_s = t.elapsed().as_secs_f64();
        if app.browser.rec.path.as_deref() != Some(path) {
            anyhow::bail!("{}: the app did not open it", path.display());
        }
        if k > 0 {
            open.push(open_s);
            first.push(first_s);
        }
    }
    Ok(FirstPage {
        file: path.display().to_string(),
        format: rec.format.to_string(),
        channels: rec.signals.len(),
        fs: rec.most_common_rate(),
        duration_s: rec.duration_s(),
        open_s: Stats::of(open),
        first_page_s: Stats::of(first),
    })
}

/// Every file of `files` (folders that are recordings, such as `.ds` and `.mff`, included).
pub(super) fn run(files: &[PathBuf], runs: usize) -> anyhow::Result<Vec<FirstPage>> {
    files.iter().map(|f| measure(f, runs)).collect()
}
