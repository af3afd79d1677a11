//! The night on the UI (wgpu on lavapipe in CI): scoring keys write stages and page by epochs,
//! Backspace undoes; the strips compute in the background and a click on them jumps there.

mod common;

use common::ui::harness;
use ede::analysis::Backend;
use ede::app::night::Night;
use ede::app::{EdeApp, Purpose, Settings};
use ede::dsp::sleep::{Stage, hypnogram};
use eframe::egui;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

/// Steps until the browser (and the strips it shows) are ready.
fn settle(h: &mut Harness<'_, EdeApp>) {
    common::ui::settle(h);
    assert!(
        h.state().browser.ready(),
        "the browser and its strips settle"
    );
}

fn stages(h: &Harness<'_, EdeApp>) -> Vec<Stage> {
    hypnogram(h.state().browser.events.list(), 30.0, &[])
}

#[test]
fn scoring_keys_score_an_epoch_and_move_on() {
    let mut app = EdeApp::new(None, None, Settings::default(), None);
    Night::open_with(&mut app.browser, false, true);
    let mut h = harness(app);
    settle(&mut h);
    assert_eq!(h.state().browser.visible_span(), (0.0, 30.0));
    h.key_press(egui::Key::W);
    h.run_steps(2);
    assert_eq!(h.state().browser.visible_span(), (30.0, 60.0));
    h.key_press(egui::Key::Num2);
    h.run_steps(2);
    h.key_press(egui::Key::R);
    h.run_steps(2);
    assert_eq!(stages(&h), [Stage::Wake, Stage::N2, Stage::Rem]);
    assert_eq!(h.state().browser.visible_span(), (90.0, 120.0));
    // Backspace takes the last score back and returns to its epoch.
    h.key_press(egui::Key::Backspace);
    h.run_steps(2);
    assert_eq!(stages(&h), [Stage::Wake, Stage::N2]);
    assert_eq!(h.state().browser.visible_span(), (60.0, 90.0));
    // Rescoring an epoch replaces its stage.
    h.state_mut().browser.show(30.0, Some(30.0));
    h.run_steps(2);
    h.key_press(egui::Key::Num3);
    h.run_steps(2);
    assert_eq!(stages(&h), [Stage::Wake, Stage::N3]);
    assert!(h.state().browser.events.unsaved);
}

#[test]
fn strips_compute_and_a_click_jumps_there() {
    let mut app = EdeApp::new(None, None, Settings::default(), None);
    Night::open_with(&mut app.browser, true, false);
    let mut h = harness(app);
    settle(&mut h);
    let plot = h.state().browser.plot_rect;
    let total = h.state().browser.rec.time_span_s();
    // The first strip (CDSA) lies under the header, above the traces.
    let at = egui::pos2(plot.left() + 0.75 * plot.width(), 75.0);
    assert!(at.y < plot.top(), "strips above the traces ({plot:?})");
    h.hover_at(at);
    h.run_steps(1);
    h.event(egui::Event::PointerButton {
        pos: at,
        button: egui::PointerButton::Primary,
        pressed: true,
        modifiers: egui::Modifiers::NONE,
    });
    h.run_steps(1);
    h.event(egui::Event::PointerButton {
        pos: at,
        button: egui::PointerButton::Primary,
        pressed: false,
        modifiers: egui::Modifiers::NONE,
    });
    h.run_steps(3);
    let (t0, t1) = h.state().browser.visible_span();
    let centre = (t0 + t1) / 2.0;
    assert!(
        (centre - 0.75 * total).abs() < 0.05 * total,
        "jumped to {t0}..{t1} of {total} s"
    );
}

#[test]
fn strips_compute_on_the_gpu_as_on_the_cpu() {
    let Ok(gpu) = ede::gpu::GpuContext::headless() else {
        assert!(std::env::var_os("CI").is_none(), "CI has lavapipe");
        return;
    };
    let strips = |gpu: Option<ede::gpu::GpuContext>| {
        let mut app = EdeApp::new(None, None, Settings::default(), None);
        Night::open_with(&mut app.browser, true, false);
        if let Some(g) = gpu {
            app.browser.night.trends_on(g);
        }
        let mut h = harness(app);
        settle(&mut h);
        let (t, on) = h.state().browser.night.trends().expect("trends computed");
        (t.clone(), on)
    };
    let ((cpu, a), (gpu, b)) = (strips(None), strips(Some(gpu)));
    assert_eq!((a, b), (Backend::Cpu, Backend::Gpu));
    let (c, g) = (cpu.cdsa.unwrap(), gpu.cdsa.unwrap());
    assert!(!c.power[0].is_empty());
    for (x, y) in c
        .power
        .iter()
        .flatten()
        .flatten()
        .zip(g.power.iter().flatten().flatten())
    {
        assert!((x - y).abs() <= 1e-3, "{x} {y} dB");
    }
    let (c, g) = (cpu.aeeg.unwrap(), gpu.aeeg.unwrap());
    for (x, y) in c.upper_uv.iter().flatten().zip(g.upper_uv.iter().flatten()) {
        assert!((x - y).abs() <= 1e-3, "{x} {y} uV");
    }
}

/// File > Load annotations, typed where no dialog shows: the file's events join the
/// recording's as one undoable edit; a file without any says so.
#[test]
fn annotations_load_from_another_file() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let annotated = fixtures.join("fif_channel_annotations_raw.fif");
    let theirs = ede::recording::Recording::open(&annotated, &Default::default())
        .unwrap()
        .annotations
        .len();
    assert!(theirs > 0);
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let before = h.state().browser.events.list().len();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.csv");
    std::fs::write(&plain, "time,A\n0,1\n0.01,2\n0.02,3\n").unwrap();
    for path in [annotated, plain] {
        h.state_mut().show_path_field(Purpose::Annotations, None);
        h.run_steps(2);
        let field = h.get_by_role_and_label(egui::accesskit::Role::TextInput, "Path");
        field.focus();
        field.type_text(path.to_str().unwrap());
        h.run_steps(1);
        h.get_by_label("Load").click();
        h.run_steps(2);
    }
    assert_eq!(h.state().browser.events.list().len(), before + theirs);
    let message = format!("{:?}", h.state().browser.message);
    assert!(message.contains("has no annotations"), "{message}");
}
