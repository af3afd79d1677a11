//! Export buttons every analysis view shows (CSV, JSON, PNG), and the writing behind them: a
//! file is written beside its target and renamed, so a failed save leaves no partial file and
//! an earlier file intact. PNGs are taken from the screen by the app after the frame
//! (`AnalysisView::take_png_request`).

use std::path::{Path, PathBuf};

use eframe::egui;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Json,
    Png,
}

impl Format {
    fn ext(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Json => "json",
            Format::Png => "png",
        }
    }
}

/// The export buttons; a click asks where to save (`stem`.ext proposed) and returns the
/// format and the chosen file.
pub fn buttons(ui: &mut egui::Ui, stem: &str) -> Option<(Format, PathBuf)> {
    let mut chosen = None;
    ui.horizontal(|ui| {
        ui.label("Export");
        for (format, label) in [
            (Format::Csv, "CSV…"),
            (Format::Json, "JSON…"),
            (Format::Png, "PNG…"),
        ] {
            if ui.button(label).clicked() {
                chosen = Some(format);
            }
        }
    });
    let format = chosen?;
    let ext = format.ext();
    let path = rfd::FileDialog::new()
        .set_file_name(format!("{stem}.{ext}"))
        .add_filter(ext, &[ext])
        .save_file()?;
    Some((format, path))
}

/// `recording::write_whole`, its error said for the status line.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    crate::recording::write_whole(path, bytes)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_the_earlier_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.csv");
        write_atomic(&file, b"old").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"old");
        let missing = dir.path().join("no such folder").join("m.csv");
        assert!(write_atomic(&missing, b"new").is_err());
        write_atomic(&file, b"new").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
