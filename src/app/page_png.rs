//! Saving the page as a PNG (File > Save the page as PNG, `--screenshot`): the window is shot
//! at its size or resized for the shot and back.

use std::path::PathBuf;
use std::sync::Arc;

use eframe::egui;

use super::EdeApp;

/// A PNG of the whole window, at its size or resized for the shot (and back after); for
/// `--screenshot`, the app closes once it is written.
pub(super) struct PagePng {
    path: PathBuf,
    /// Pixels.
    size: Option<[u32; 2]>,
    close_after: bool,
    /// The window's size (points) before a resize, to go back to.
    restore: Option<egui::Vec2>,
    frames: u32,
    requested: bool,
    result: Arc<std::sync::Mutex<Option<Result<(), String>>>>,
}

impl PagePng {
    pub(super) fn new(path: PathBuf, size: Option<[u32; 2]>, close_after: bool) -> Self {
        PagePng {
            path,
            size,
            close_after,
            restore: None,
            frames: 0,
            requested: false,
            result: Arc::new(std::sync::Mutex::new(None)),
        }
    }
}

impl EdeApp {
    /// Advances a page PNG: resize if asked, wait until the view is ready, take it, and then
    /// restore the size (or close, for `--screenshot`).
    pub(super) fn page_png_frame(&mut self, ctx: &egui::Context) {
        let ready = self.ready();
        let Some(job) = self.page_png.as_mut() else {
            return;
        };
        ctx.request_repaint();
        job.frames += 1;
        let finished = job.result.lock().ok().and_then(|r| r.clone());
        if let Some(result) = finished {
            if job.close_after {
                ctx.send_viewport_cmd(egui::ViewportCommand::Close);
                return;
            }
            if let Some(size) = job.restore {
                ctx.send_viewport_cmd(egui::ViewportCommand::InnerSize(size));
            }
            let path = job.path.display().to_string();
            self.browser.message = Some(result.map(|()| format!("saved {path}")));
            self.page_png = None;
            return;
        }
        if job.frames == 1
            && let Some([w, h]) = job.size
        {
            let ppp = ctx.pixels_per_point();
            job.restore = ctx.input(|i| i.viewport().inner_rect.map(|r| r.size()));
            ctx.send_viewport_cmd(egui::ViewportCommand::InnerSize(egui::vec2(
                w as f32 / ppp,
                h as f32 / ppp,
            )));
        }
        // A resized window takes a few frames to settle.
        let wait = if job.size.is_some() { 8 } else { 3 };
        if !job.requested && job.frames >= wait && ready {
            job.requested = true;
            let (path, result, repaint) = (job.path.clone(), job.result.clone(), ctx.clone());
            ctx.send_viewport_cmd(egui::ViewportCommand::Screenshot(
                egui::ScreenshotCallback::new(move |image| {
                    let saved = save_png(&image, &path).map_err(|e| e.to_string());
                    if let Err(e) = &saved {
                        eprintln!("ede: {e}");
                    }
                    if let Ok(mut r) = result.lock() {
                        *r = Some(saved);
                    }
                    repaint.request_repaint();
                }),
            ));
        }
    }
}

pub fn save_png(image: &egui::ColorImage, path: &std::path::Path) -> anyhow::Result<()> {
    let [w, h] = image.size;
    let bytes: Vec<u8> = image.pixels.iter().flat_map(|c| c.to_array()).collect();
    image::save_buffer(
        path,
        &bytes,
        w as u32,
        h as u32,
        image::ExtendedColorType::Rgba8,
    )
    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}
