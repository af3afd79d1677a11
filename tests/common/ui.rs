//! The UI tests' harness: the app on wgpu (lavapipe in CI) at 1280 x 800, and stepping until
//! the browser (and the strips it shows) are ready.

use ede::app::EdeApp;
use eframe::egui;
use egui_kittest::Harness;

pub fn harness(app: EdeApp) -> Harness<'static, EdeApp> {
    Harness::builder()
        .with_size(egui::vec2(1280.0, 800.0))
        .wgpu()
        .build_ui_state(|ui, app: &mut EdeApp| app.ui(ui), app)
}

/// Steps until the overview pyramid (and the night's strips) are built, so that a frame does
/// not depend on thread timing; gives up after 2000 steps (`browser.ready()` says whether).
pub fn settle(h: &mut Harness<'_, EdeApp>) {
    for _ in 0..2000 {
        h.step();
        if h.state().browser.ready() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    h.run_steps(3);
}

/// Steps until the view shown shows what its current settings ask for (at most 300 s).
pub fn settle_view(h: &mut Harness<'_, EdeApp>) {
    let t = std::time::Instant::now();
    while t.elapsed().as_secs() < 300 {
        h.step();
        if h.state().ready() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    h.run_steps(3);
}

/// Writes the frame to the test's temporary folder (CARGO_TARGET_TMPDIR), to be looked at.
pub fn save(h: &mut Harness<'_, EdeApp>, name: &str) {
    let image = h.render().expect("a frame");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    image.save(dir.join(name)).unwrap();
}
