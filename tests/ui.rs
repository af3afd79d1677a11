//! UI tests on the wgpu renderer (lavapipe in CI): a snapshot of the browser on the demo, and
//! navigation that must move the visible time span.

use ede::app::{EdeApp, Settings};
use eframe::egui;
use egui_kittest::{Harness, SnapshotOptions};

fn harness(app: EdeApp) -> Harness<'static, EdeApp> {
    Harness::builder()
        .with_size(egui::vec2(1280.0, 800.0))
        .wgpu()
        .build_ui_state(|ui, app: &mut EdeApp| app.ui(ui), app)
}

/// Steps until the overview pyramid is built, so the frame does not depend on thread timing.
fn settle(h: &mut Harness<'_, EdeApp>) {
    for _ in 0..500 {
        h.step();
        if h.state().browser.ready() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    h.run_steps(3);
}

fn wheel(h: &Harness<'_, EdeApp>, lines: f32, modifiers: egui::Modifiers) {
    h.event(egui::Event::MouseWheel {
        unit: egui::MouseWheelUnit::Line,
        delta: egui::vec2(0.0, lines),
        phase: egui::TouchPhase::Move,
        source: egui::MouseWheelSource::Wheel,
        modifiers,
    });
}

#[test]
fn browser_snapshot_of_the_demo() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let labels = h.state().browser.trace_labels();
    assert_eq!(labels.len(), 20);
    h.snapshot_options(
        "browser_demo",
        &SnapshotOptions::new()
            .threshold(2.0)
            .max_failed_pixels(2000),
    );
}

#[test]
fn keyboard_and_wheel_navigation_move_the_window() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let (t0, t1) = h.state().browser.visible_span();
    assert_eq!((t0, t1), (0.0, 10.0));

    h.key_press(egui::Key::PageDown);
    h.run_steps(2);
    assert_eq!(h.state().browser.visible_span(), (10.0, 20.0));

    h.key_press(egui::Key::ArrowRight);
    h.run_steps(2);
    assert_eq!(h.state().browser.visible_span().0, 11.0);

    // ctrl + wheel over the traces zooms the time axis.
    h.hover_at(egui::pos2(600.0, 400.0));
    wheel(&h, -3.0, egui::Modifiers::CTRL);
    h.run_steps(3);
    let (a, b) = h.state().browser.visible_span();
    assert!(b - a > 10.5, "zoomed out to {a}..{b}");

    // A plain wheel scrolls in time.
    let before = h.state().browser.visible_span().0;
    wheel(&h, -5.0, egui::Modifiers::NONE);
    h.run_steps(10);
    assert!(
        h.state().browser.visible_span().0 > before,
        "wheel scrolled"
    );

    h.key_press(egui::Key::Home);
    h.run_steps(2);
    assert_eq!(h.state().browser.visible_span().0, 0.0);
}
