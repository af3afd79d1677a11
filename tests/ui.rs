//! UI tests on the wgpu renderer (lavapipe in CI): a snapshot of the browser on the demo, and
//! navigation that must move the visible time span.

mod common;

use common::ui::{harness, settle, settle_view};
use ede::app::hermite_view::HermiteView;
use ede::app::scalogram_view::ScalogramView;
use ede::app::xapen_view::XapenView;
use ede::app::{EdeApp, Purpose, Settings};
use eframe::egui;
use egui_kittest::kittest::{NodeT, Queryable};
use egui_kittest::{Harness, SnapshotOptions};

/// A headless GPU (lavapipe in CI), or `None` outside CI when there is no adapter.
fn headless_gpu() -> Option<ede::gpu::GpuContext> {
    match ede::gpu::GpuContext::headless() {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must have an adapter: {e}"
            );
            None
        }
    }
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

/// A recording with more channels than a page: 20 lanes at a time, moved by Shift+PageDown
/// and the wheel, all of them when asked; the time axis stays where it was.
#[test]
fn many_channels_page_and_scroll() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wide.csv");
    let names: Vec<String> = (1..=130).map(|i| format!("E{i}")).collect();
    let mut text = format!("time,{}\n", names.join(","));
    for k in 0..1000 {
        let row: Vec<String> = (0..130)
            .map(|c| format!("{}", ((k + c) % 7) as f32))
            .collect();
        text += &format!("{},{}\n", k as f64 / 250.0, row.join(","));
    }
    std::fs::write(&path, text).unwrap();
    let mut h = harness(EdeApp::new(Some(path), None, Settings::default(), None));
    settle(&mut h);
    let page = h.state_mut().browser.page_labels();
    assert_eq!(page, names[..20]);
    h.key_press_modifiers(egui::Modifiers::SHIFT, egui::Key::PageDown);
    h.run_steps(2);
    assert_eq!(h.state_mut().browser.page_labels(), names[20..40]);
    assert_eq!(h.state().browser.visible_span().0, 0.0, "time stays");
    h.hover_at(egui::pos2(600.0, 400.0));
    wheel(&h, -3.0, egui::Modifiers::NONE);
    h.run_steps(10);
    let first = h.state_mut().browser.page_labels()[0].clone();
    assert!(first != "E21", "the wheel moved the lanes: {first}");
    assert_eq!(h.state().browser.visible_span().0, 0.0, "time stays");
    h.state_mut().browser.settings.channels_per_page = 0;
    h.run_steps(2);
    assert_eq!(h.state_mut().browser.page_labels().len(), 130);
}

/// A BIDS dataset's folder opens its first run with the runs listed; another run opens with
/// its sidecars (a bad channel marked).
#[test]
fn a_bids_folder_lists_its_runs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bids");
    let mut h = harness(EdeApp::new(Some(root), None, Settings::default(), None));
    settle(&mut h);
    assert!(h.state().error().is_none(), "{:?}", h.state().error());
    let panel = h.state().dataset.as_ref().expect("the runs are listed");
    assert_eq!(panel.dataset.runs.len(), 6);
    assert_eq!(panel.current, Some(0));
    assert_eq!(h.state().browser.trace_labels().len(), 11);
    assert_eq!(
        h.query_all_by_label("oddball").count(),
        3,
        "a row per oddball run"
    );
    h.state_mut().open_run(3);
    settle(&mut h);
    let rec = h.state().browser.rec.clone();
    assert!(rec.display_name().contains("sub-02_task-rest"));
    assert!(rec.signals[rec.signal_index("O2").unwrap()].bad);
}

/// Steps until the Cross-ApEn view shows the matrix for its current settings.
fn settle_xapen(h: &mut Harness<'_, EdeApp>) {
    // Time, not frames: GPU tests share lavapipe's two cores in CI.
    let t = std::time::Instant::now();
    while t.elapsed().as_secs() < 120 {
        h.step();
        if h.state().view_ref::<XapenView>().is_some_and(|x| x.ready()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    h.run_steps(2);
}

fn xapen_app(gpu: Option<ede::gpu::GpuContext>) -> EdeApp {
    let mut app = EdeApp::new(None, None, Settings::default(), gpu);
    assert!(app.show_view("xapen"));
    app
}

/// The matrix appears, r changes in three consecutive frames as a drag does, and what is
/// shown in the end is the newest r's matrix, never an older one.
fn drag_r_shows_the_newest_matrix(mut h: Harness<'_, EdeApp>) {
    settle_xapen(&mut h);
    let (labels, r, first) = {
        let (l, r, m) = h.state().view_ref::<XapenView>().unwrap().shown().unwrap();
        (l, r, m.to_vec())
    };
    assert_eq!(labels.len(), 19, "the demo's EEG channels");
    assert_eq!(r, 0.2);
    assert!(first.iter().all(|v| v.is_finite() && *v > 0.0));
    for r in [0.25, 0.3, 0.35] {
        h.state_mut().view_mut::<XapenView>().unwrap().set_r(r);
        h.step();
    }
    settle_xapen(&mut h);
    let view = h.state().view_ref::<XapenView>().unwrap();
    let (_, r, last) = view.shown().unwrap();
    assert_eq!(r, 0.35);
    assert_eq!(view.params().r, 0.35);
    assert!(last.iter().zip(&first).any(|(a, b)| a != b));
}

#[test]
fn xapen_view_follows_r_on_the_cpu() {
    drag_r_shows_the_newest_matrix(harness(xapen_app(None)));
}

#[test]
fn xapen_view_follows_r_on_the_gpu() {
    let Some(ctx) = headless_gpu() else { return };
    let mut h = harness(xapen_app(Some(ctx)));
    h.step();
    h.state_mut()
        .view_mut::<XapenView>()
        .unwrap()
        .set_backend(ede::analysis::Backend::Gpu);
    drag_r_shows_the_newest_matrix(h);
}

/// As a recording opens, every analysis's kernels compile in the background: the Cross-ApEn
/// tab opened afterwards shows its matrix without compiling a pipeline.
#[test]
fn the_xapen_tab_opened_after_the_file_compiles_nothing() {
    let Some(ctx) = headless_gpu() else { return };
    let app = EdeApp::new(None, None, Settings::default(), Some(ctx.clone()));
    ctx.wait_prepared();
    let compiled = ctx.pipelines_created();
    let mut h = harness(app);
    assert!(h.state_mut().show_view("xapen"));
    h.state_mut()
        .view_mut::<XapenView>()
        .unwrap()
        .set_backend(ede::analysis::Backend::Gpu);
    settle_xapen(&mut h);
    let (labels, _, matrix) = h.state().view_ref::<XapenView>().unwrap().shown().unwrap();
    assert_eq!(labels.len(), 19);
    assert!(matrix.iter().all(|v| v.is_finite() && *v > 0.0));
    assert_eq!(ctx.pipelines_created(), compiled, "the tab compiled");
    // Without preparation the same kernels compile: what the count above would have seen.
    ede::gpu::xapen::XapenKernels::new(&ctx);
    assert!(ctx.pipelines_created() > compiled);
}

#[test]
fn xapen_snapshot_of_the_demo() {
    let mut h = harness(xapen_app(None));
    settle_xapen(&mut h);
    h.snapshot_options(
        "xapen_demo",
        &SnapshotOptions::new()
            .threshold(2.0)
            .max_failed_pixels(2000),
    );
}

/// Shift+drag over the traces selects a time range (a plain drag would pan), and the
/// Cross-ApEn view can take its epochs from it.
#[test]
fn shift_drag_selects_a_range_for_cross_apen() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let shift = egui::Modifiers::SHIFT;
    h.event(egui::Event::ModifiersChanged(shift));
    h.hover_at(egui::pos2(300.0, 300.0));
    h.step();
    h.event(egui::Event::PointerButton {
        pos: egui::pos2(300.0, 300.0),
        button: egui::PointerButton::Primary,
        pressed: true,
        modifiers: shift,
    });
    h.step();
    for x in [400.0, 600.0, 900.0] {
        h.hover_at(egui::pos2(x, 310.0));
        h.step();
    }
    h.drop_at(egui::pos2(900.0, 310.0));
    h.event(egui::Event::ModifiersChanged(egui::Modifiers::NONE));
    h.run_steps(2);
    assert_eq!(
        h.state().browser.visible_span(),
        (0.0, 10.0),
        "a shift+drag does not pan"
    );
    let (a, b) = h.state().browser.selection.expect("a selection");
    assert!(a > 0.5 && b > a + 4.0 && b < 10.0, "{a}..{b}");

    assert!(h.state_mut().show_view("xapen"));
    h.step();
    h.state_mut()
        .view_mut::<XapenView>()
        .unwrap()
        .set_source(ede::app::xapen_view::EpochSource::Selection);
    settle_xapen(&mut h);
    let view = h.state().view_ref::<XapenView>().unwrap();
    let (start, epochs) = view.shown_epochs().unwrap();
    assert_eq!(start, (a * 256.0).round() as usize);
    assert_eq!(epochs, ((b - a) * 256.0) as usize / 1024);

    h.key_press(egui::Key::Escape);
    assert!(h.state_mut().show_view("browser"));
    h.run_steps(2);
    assert_eq!(h.state().browser.selection, None);
}

/// `ede FILE --start S --span D|all` opens the browser there, kept inside the recording.
#[test]
fn opening_at_a_time_and_span_stays_inside_the_recording() {
    let mut app = EdeApp::new(None, None, Settings::default(), None);
    app.browser.show(30.0, Some(20.0));
    assert_eq!(app.browser.visible_span(), (30.0, 50.0));
    app.browser.show(1e9, None);
    assert_eq!(app.browser.visible_span(), (0.0, 120.0));
    app.browser.show(110.0, Some(20.0));
    assert_eq!(app.browser.visible_span(), (100.0, 120.0));
}

/// Typing in the annotation filter narrows the list, and "next" jumps to the next match.
#[test]
fn annotation_filter_and_next_jump_to_matches() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let onsets: Vec<f64> = (h.state().browser.rec.annotations.iter())
        .filter(|a| a.text.contains("Eyes"))
        .map(|a| a.onset)
        .collect();
    let total = h.state().browser.rec.annotations.len();
    assert!(onsets.len() >= 2 && onsets.len() < total);
    // The filter field: the last text field of the panel (the event editor's come first).
    let field = h
        .get_all_by_role(egui::accesskit::Role::TextInput)
        .last()
        .expect("the filter field");
    field.focus();
    field.type_text("eYeS");
    h.run_steps(2);
    h.get_by_label(&format!("Annotations ({} of {total})", onsets.len()));
    // Keys go to the field while it has focus, not to navigation.
    h.key_press(egui::Key::ArrowRight);
    h.key_press(egui::Key::Minus);
    h.run_steps(2);
    assert_eq!(h.state().browser.visible_span(), (0.0, 10.0));
    h.get_by_label("Next >").click();
    h.run_steps(2);
    let first_after = onsets.iter().copied().find(|&t| t > 1.0 + 1e-6).unwrap();
    let (t0, t1) = h.state().browser.visible_span();
    assert!(
        (t0 - (first_after - 1.0)).abs() < 1e-9,
        "{t0} vs {first_after}"
    );
    h.get_by_label("Next >").click();
    h.run_steps(2);
    let second = onsets
        .iter()
        .copied()
        .find(|&t| t > first_after + 1e-6)
        .unwrap();
    assert!((h.state().browser.visible_span().0 - (second - 1.0)).abs() < 1e-9);
    h.get_by_label("< Previous").click();
    h.run_steps(2);
    assert_eq!(h.state().browser.visible_span(), (t0, t1));
}

/// omega0 changes in three consecutive frames, as a drag does: the image shown in the end is
/// the newest omega0's, pixel for pixel what the CPU paints for it, never an older one.
fn drag_omega0_shows_the_newest_image(mut h: Harness<'_, EdeApp>) {
    settle(&mut h);
    assert!(h.state_mut().show_view("scalogram"));
    settle_view(&mut h);
    let first = {
        let view = h.state().view_ref::<ScalogramView>().unwrap();
        assert_eq!(view.error(), None);
        let (params, image) = view.shown().expect("an image");
        assert_eq!(params.omega0, 6.0);
        image.expect("pixels held").clone()
    };
    for w in [6.5, 7.0, 8.0] {
        h.state_mut()
            .view_mut::<ScalogramView>()
            .unwrap()
            .set_omega0(w);
        h.step();
    }
    settle_view(&mut h);
    let view = h.state().view_ref::<ScalogramView>().unwrap();
    let (params, image) = view.shown().unwrap();
    assert_eq!(params.omega0, 8.0);
    let image = image.unwrap();
    assert_eq!(image.size, first.size);
    assert!(
        image.pixels != first.pixels,
        "the image changed with omega0"
    );
}

#[test]
fn scalogram_follows_omega0_on_the_cpu() {
    drag_omega0_shows_the_newest_image(harness(EdeApp::new(None, None, Settings::default(), None)));
}

#[test]
fn scalogram_follows_omega0_on_the_gpu() {
    let Some(ctx) = headless_gpu() else { return };
    let mut h = harness(EdeApp::new(None, None, Settings::default(), Some(ctx)));
    h.state_mut()
        .view_mut::<ScalogramView>()
        .unwrap()
        .set_backend(ede::analysis::Backend::Gpu);
    drag_omega0_shows_the_newest_image(h);
}

#[test]
fn scalogram_snapshot_of_the_demo() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    assert!(h.state_mut().show_view("scalogram"));
    settle_view(&mut h);
    h.snapshot_options(
        "scalogram_demo",
        &SnapshotOptions::new()
            .threshold(2.0)
            .max_failed_pixels(3000),
    );
}

/// A file that cannot be opened leaves the app running, the demo shown and the error said:
/// for a bad file of every format.
#[test]
fn a_failed_open_keeps_the_app_with_the_error_shown() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        (
            "bad.vhdr",
            &b"Brain Vision Data Exchange Header File Version 1.0\n"[..],
        ),
        ("bad.set", &b"MATLAB 5.0 MAT-file, truncated"[..]),
        (
            "bad.fif",
            &[0, 0, 0, 100, 0, 0, 0, 31, 0, 0, 0, 20, 0, 0, 0, 0, 1][..],
        ),
        ("bad.edf", &b"0       truncated"[..]),
    ] {
        let bad = dir.path().join(name);
        std::fs::write(&bad, bytes).unwrap();
        let mut h = harness(EdeApp::new(Some(bad), None, Settings::default(), None));
        settle(&mut h);
        let e = h.state().error().expect("the error is kept").to_string();
        assert!(e.contains(name), "{e}");
        assert_eq!(
            h.state().browser.trace_labels().len(),
            20,
            "the demo is shown"
        );
    }
    let bad = dir.path().join("notes.txt");
    std::fs::write(&bad, "not a recording").unwrap();
    let mut h = harness(EdeApp::new(Some(bad), None, Settings::default(), None));
    settle(&mut h);
    let e = h.state().error().expect("the error is kept").to_string();
    assert!(e.contains("notes.txt"), "{e}");
    h.get_by_label("Cannot open the file");
    assert_eq!(
        h.state().browser.trace_labels().len(),
        20,
        "the demo is shown"
    );
    h.get_by_label("OK").click();
    h.run_steps(2);
    assert_eq!(h.state().error(), None);
}

/// File > Open a path: a path that fails keeps the app with the error shown; a good one opens.
#[test]
fn the_path_field_opens_a_typed_path() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("two.csv");
    std::fs::write(&good, "time,A,B\n0,1,2\n0.01,2,3\n0.02,3,4\n0.03,4,5\n").unwrap();
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    for (path, opens) in [
        (dir.path().join("missing.edf"), false),
        (good.clone(), true),
    ] {
        h.state_mut().show_path_field(Purpose::Open, None);
        h.run_steps(2);
        let field = h.get_by_role_and_label(egui::accesskit::Role::TextInput, "Path");
        field.focus();
        field.type_text(path.to_str().unwrap());
        h.run_steps(1);
        h.get_by_label("Open").click();
        h.run_steps(2);
        if opens {
            assert_eq!(h.state().error(), None);
            assert_eq!(h.state().browser.trace_labels(), vec!["A", "B"]);
        } else {
            assert!(h.state().error().is_some_and(|e| e.contains("missing.edf")));
            h.get_by_label("OK").click();
            h.run_steps(2);
        }
    }
}

/// Three traces stacked, in magma, |W|^2/s: bands labelled, each with its frequency axis.
#[test]
fn scalogram_stacks_several_traces() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    assert!(h.state_mut().show_view("scalogram"));
    h.state_mut()
        .view_mut::<ScalogramView>()
        .unwrap()
        .set_traces(vec![0, 8, 19]);
    settle_view(&mut h);
    let view = h.state().view_ref::<ScalogramView>().unwrap();
    assert_eq!(view.error(), None);
    let (params, image) = view.shown().unwrap();
    let rows = params.scales(1.0 / 256.0).unwrap().len();
    assert_eq!(
        image.unwrap().size[1],
        3 * rows,
        "three bands of every scale"
    );
    h.snapshot_options(
        "scalogram_stacked",
        &SnapshotOptions::new()
            .threshold(2.0)
            .max_failed_pixels(3000),
    );
}

/// N changes in three consecutive frames, as a slider drag does: the fits shown in the end
/// are the newest N's, and equal to the CPU fit of the same beats.
fn drag_order_shows_the_newest_fits(mut h: Harness<'_, EdeApp>) {
    settle(&mut h);
    assert!(h.state_mut().show_view("beats"));
    settle_view(&mut h);
    {
        let view = h.state().view_ref::<HermiteView>().unwrap();
        assert_eq!(view.error(), None);
        let (order, fits, labels) = view.shown().expect("fits");
        assert_eq!(order, 6);
        // The demo has no beat annotations: the detector found its ECG's beats.
        assert!(fits.len() > 100, "{}", fits.len());
        assert!(labels.iter().all(|l| l.is_none()));
    }
    for n in [8, 12, 20] {
        h.state_mut()
            .view_mut::<HermiteView>()
            .unwrap()
            .set_order(n);
        h.step();
    }
    settle_view(&mut h);
    let view = h.state().view_ref::<HermiteView>().unwrap();
    let (order, fits, _) = view.shown().unwrap();
    assert_eq!(order, 20);
    assert_eq!(fits.coefficients.len(), fits.len() * 20);
    let rec = ede::recording::demo::demo_recording();
    let ecg = ede::analysis::hermite::default_ecg_channel(&rec).unwrap();
    let beats = ede::analysis::hermite::EcgBeats::prepare(
        &rec,
        ecg,
        ede::analysis::hermite::EcgFilter::Default,
        false,
    )
    .unwrap();
    let params = ede::dsp::hermite::HermiteParams {
        order: 20,
        ..Default::default()
    };
    let cpu = ede::dsp::hermite::Basis::new(beats.fs, &params)
        .unwrap()
        .fit(&beats.windows, None)
        .unwrap();
    assert_eq!(cpu.len(), fits.len());
    for i in 0..fits.len() {
        assert!(
            (cpu.mse[i] - fits.mse[i]).abs() <= 1e-4 * cpu.mse[i].max(1e-12),
            "beat {i}"
        );
    }
}

#[test]
fn beats_follow_the_order_on_the_cpu() {
    drag_order_shows_the_newest_fits(harness(EdeApp::new(None, None, Settings::default(), None)));
}

#[test]
fn beats_follow_the_order_on_the_gpu() {
    let Some(ctx) = headless_gpu() else { return };
    let mut h = harness(EdeApp::new(None, None, Settings::default(), Some(ctx)));
    h.state_mut()
        .view_mut::<HermiteView>()
        .unwrap()
        .set_backend(ede::analysis::Backend::Gpu);
    drag_order_shows_the_newest_fits(h);
}

/// On record 100 (annotated): next/previous step through beats of one label, and the browser
/// follows the selected beat.
#[test]
fn beat_explorer_steps_by_label_and_moves_the_browser() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let path = data.join("ecg/mitdb/100.hea");
    let mut h = harness(EdeApp::new(Some(path), None, Settings::default(), None));
    settle(&mut h);
    assert!(h.state_mut().show_view("beats"));
    settle_view(&mut h);
    let labels: Vec<Option<String>> = {
        let view = h.state().view_ref::<HermiteView>().unwrap();
        view.shown().unwrap().2.to_vec()
    };
    let first_v = labels
        .iter()
        .position(|l| l.as_deref() == Some("V"))
        .expect("a V beat");
    h.state_mut()
        .view_mut::<HermiteView>()
        .unwrap()
        .select(first_v);
    h.run_steps(2);
    let in_view = |h: &Harness<'_, EdeApp>| {
        let t = h
            .state()
            .view_ref::<HermiteView>()
            .unwrap()
            .selected_time()
            .unwrap();
        let (t0, t1) = h.state().browser.visible_span();
        t0 < t && t < t1
    };
    assert!(in_view(&h));
    let view = h.state_mut().view_mut::<HermiteView>().unwrap();
    // Record 100 has a single V beat: no next or previous one.
    assert!(!view.step_same_label(true) && !view.step_same_label(false));
    assert_eq!(view.selected(), first_v);
    // Its A beats: next goes to the next A.
    let a: Vec<usize> = (0..labels.len())
        .filter(|&i| labels[i].as_deref() == Some("A"))
        .collect();
    view.select(a[0]);
    assert!(view.step_same_label(true));
    assert_eq!(view.selected(), a[1]);
    assert!(view.step_same_label(false));
    assert_eq!(view.selected(), a[0]);
    h.run_steps(2);
    assert!(in_view(&h));
    h.snapshot_options(
        "beats_record_100",
        &SnapshotOptions::new()
            .threshold(2.0)
            .max_failed_pixels(3000),
    );
}

/// The Nihon Kohden EDF+D export (referential channels, offsets of hundreds of uV): each trace
/// is drawn whole, into its neighbours' lanes where it swings past its own (never
/// flat-topped), and Fit scales every channel to its own range in the window.
#[test]
fn nihon_kohden_traces_keep_their_lanes_and_fit() {
    let Some(data) = common::shared_data() else {
        return;
    };
    let path = data.join("edf/nihonkohden_MB0400FU.edf");
    let mut h = harness(EdeApp::new(Some(path), None, Settings::default(), None));
    settle(&mut h);
    assert!(h.state().browser.settings.overlap);
    h.snapshot_options(
        "nihonkohden_lanes",
        &SnapshotOptions::new()
            .threshold(2.0)
            .max_failed_pixels(3000),
    );
    let traces = h.state().browser.traces.spec.derivations.len();
    let before: Vec<f32> = (0..traces)
        .map(|d| h.state().browser.lane_scale(d))
        .collect();
    h.state_mut().browser.request_fit();
    h.run_steps(3);
    let after: Vec<f32> = (0..traces)
        .map(|d| h.state().browser.lane_scale(d))
        .collect();
    let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
    assert!(changed > traces / 2, "{before:?} {after:?}");
    // Each channel its own scale: not one factor for all.
    let ratios: Vec<f32> = before.iter().zip(&after).map(|(a, b)| b / a).collect();
    let (lo, hi) = ratios
        .iter()
        .fold((f32::MAX, 0f32), |(l, u), &r| (l.min(r), u.max(r)));
    assert!(hi > 1.5 * lo, "{ratios:?}");
    h.snapshot_options(
        "nihonkohden_fit",
        &SnapshotOptions::new()
            .threshold(2.0)
            .max_failed_pixels(3000),
    );
}

/// Measure on the demo: the cursor reads a trace's value, ctrl+click twice measures time and
/// amplitude between two points, and a selection's statistics equal the samples' own.
#[test]
fn cursor_two_point_measure_and_selection_statistics() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let plot = h.state().browser.plot_rect;
    let ctrl_click = |h: &mut Harness<'_, EdeApp>, x: f32| {
        let pos = egui::pos2(x, plot.top() + 5.0);
        h.event(egui::Event::PointerMoved(pos));
        h.step();
        for pressed in [true, false] {
            h.event(egui::Event::PointerButton {
                pos,
                button: egui::PointerButton::Primary,
                pressed,
                modifiers: egui::Modifiers::CTRL,
            });
            h.step();
        }
        h.run_steps(2);
    };
    let x_at = |t: f64| plot.left() + (t / 10.0) as f32 * plot.width();
    ctrl_click(&mut h, x_at(2.0));
    ctrl_click(&mut h, x_at(4.5));
    let b = &h.state().browser;
    assert_eq!(b.measure.len(), 2);
    let (pa, pb) = (b.measure[0], b.measure[1]);
    assert_eq!((pa.trace, pb.trace), (0, 0), "the top trace, Fp1");
    let m = b.measurement().unwrap();
    assert!((m.dt - 2.5).abs() < 0.05, "{m:?}");
    assert!((m.hz - 1.0 / m.dt).abs() < 1e-9);
    // The values are the recording's samples at those times.
    let rec = ede::recording::demo::demo_recording();
    let sample = |t: f64| {
        let k = rec.sample_at(0, t).unwrap();
        let mut v = [0f32];
        rec.read(0, k, &mut v).unwrap();
        v[0]
    };
    assert_eq!(pa.value, sample(pa.t));
    assert_eq!(m.dv, Some(sample(pb.t) - sample(pa.t)));
    // A third point starts a new measurement.
    ctrl_click(&mut h, x_at(6.0));
    assert_eq!(h.state().browser.measure.len(), 1);

    let browser = &mut h.state_mut().browser;
    browser.selection = Some((1.0, 3.0));
    let stats = browser.selection_stats().unwrap().to_vec();
    assert_eq!(stats.len(), rec.signals.len());
    for (s, (sig, info)) in stats.iter().zip(rec.signals.iter().enumerate()) {
        let (k0, k1) = (
            rec.sample_at(sig, 1.0).unwrap(),
            rec.sample_at(sig, 3.0).unwrap(),
        );
        let mut x = vec![0f32; k1 - k0 + 1];
        rec.read(sig, k0, &mut x).unwrap();
        let want = ede::dsp::stats::Summary::of(&x).unwrap();
        assert_eq!(s.summary, Some(want), "{}", info.label);
        assert_eq!(s.label, info.label);
    }
    browser.show_stats = true;
    browser.measure.clear();
    h.run_steps(1);
    ctrl_click(&mut h, x_at(2.0));
    ctrl_click(&mut h, x_at(4.5));
    h.get_by_label("Selection statistics");
    h.snapshot_options(
        "measure_demo",
        &SnapshotOptions::new()
            .threshold(2.0)
            .max_failed_pixels(3000),
    );
}

/// A channel's own filter (its label's context menu) changes that trace only, survives a
/// change of the Filter menu, and the status line names the filters.
#[test]
fn a_channel_filter_changes_that_trace_only() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let screen = |h: &Harness<'_, EdeApp>| h.state().browser.traces.screen(0.0, 10.0, 400).columns;
    let before = screen(&h);
    let lowpass = ede::dsp::filter::DisplayFilter {
        lowpass: Some(15.0),
        ..Default::default()
    };
    h.state_mut().browser.set_channel_filter(2, Some(lowpass));
    h.run_steps(2);
    let after = screen(&h);
    assert_ne!(after[2], before[2], "the filtered trace changed");
    for d in (0..before.len()).filter(|&d| d != 2) {
        assert_eq!(after[d], before[d], "trace {d} unchanged");
    }
    h.get_by_label("no filter (1 channel(s) their own)");
    // The Filter menu's choice applies to the others; trace 2 keeps its own.
    h.state_mut().browser.settings.filter.notch = Some(50.0);
    h.state_mut().browser.set_channel_filter(3, None);
    let spec = h.state().browser.traces.spec.clone();
    assert_eq!(spec.filter_of(2), lowpass);
    h.run_steps(2);
    h.get_by_label("notch 50 Hz + harmonics (1 channel(s) their own)");
    h.state_mut().browser.set_channel_filter(2, None);
    h.run_steps(2);
    h.get_by_label("notch 50 Hz + harmonics");
}

/// Events on an EDF+ file: a key adds one at the cursor, double-click adds the first label,
/// alt+drag moves the selected one, Delete removes it, ctrl+Z undoes and ctrl+shift+Z redoes;
/// the events are saved into a copy (EDF+) and as a TSV, and the original is untouched.
#[test]
fn events_added_moved_deleted_undone_and_saved() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rec.edf");
    common::write_edf(
        &file,
        false,
        Some('C'),
        1.0,
        &common::two_signals(20, false),
        None,
        &[(3.0, "lights off")],
    );
    // Frames of 1/60 s (the default quarter second is longer than a double-click may take).
    let mut h = Harness::builder()
        .with_size(egui::vec2(1280.0, 800.0))
        .with_step_dt(1.0 / 60.0)
        .wgpu()
        .build_ui_state(
            |ui, app: &mut EdeApp| app.ui(ui),
            EdeApp::new(Some(file.clone()), None, Settings::default(), None),
        );
    settle(&mut h);
    let plot = h.state().browser.plot_rect;
    let x_at = |t: f64| plot.left() + (t / 10.0) as f32 * plot.width();
    let hover = |h: &mut Harness<'_, EdeApp>, t: f64| {
        h.event(egui::Event::PointerMoved(egui::pos2(
            x_at(t),
            plot.center().y,
        )));
        h.step();
    };
    let texts = |h: &Harness<'_, EdeApp>| -> Vec<(f64, String)> {
        let e = &h.state().browser.events;
        // Whole seconds: a pointer lands within a few pixels of where it was sent.
        e.list()
            .iter()
            .map(|a| (a.onset.round(), a.text.clone()))
            .collect()
    };
    // Key 2 at 5 s: the second label.
    hover(&mut h, 5.0);
    h.key_press(egui::Key::Num2);
    h.run_steps(2);
    assert_eq!(
        texts(&h),
        [(3.0, "lights off".into()), (5.0, "sharp wave".into())]
    );
    assert_eq!(h.state().browser.events.selected, Some(1));
    // Edit its text in the panel.
    let text_field = || {
        egui_kittest::kittest::By::new()
            .role(egui::accesskit::Role::TextInput)
            .value("sharp wave")
    };
    h.get(text_field()).focus();
    h.key_press(egui::Key::End);
    h.get(text_field()).type_text(" (left)");
    h.run_steps(2);
    h.key_press(egui::Key::Escape);
    h.run_steps(2);
    assert_eq!(texts(&h)[1], (5.0, "sharp wave (left)".into()));
    // Double-click at 7 s: the first label.
    hover(&mut h, 7.0);
    let pos = egui::pos2(x_at(7.0), plot.center().y);
    for _ in 0..2 {
        for pressed in [true, false] {
            h.event(egui::Event::PointerButton {
                pos,
                button: egui::PointerButton::Primary,
                pressed,
                modifiers: Default::default(),
            });
            h.step();
        }
    }
    h.run_steps(2);
    assert_eq!(texts(&h)[2], (7.0, "spike".into()));
    // Alt+drag moves the selected event (at 7 s) 2 s earlier.
    let to = egui::pos2(x_at(5.0) + 1.0, plot.center().y);
    h.event(egui::Event::ModifiersChanged(egui::Modifiers::ALT));
    h.event(egui::Event::PointerButton {
        pos,
        button: egui::PointerButton::Primary,
        pressed: true,
        modifiers: egui::Modifiers::ALT,
    });
    h.step();
    for k in 1..=10 {
        h.event(egui::Event::PointerMoved(
            pos + (to - pos) * (k as f32 / 10.0),
        ));
        h.step();
    }
    h.event(egui::Event::PointerButton {
        pos: to,
        button: egui::PointerButton::Primary,
        pressed: false,
        modifiers: egui::Modifiers::ALT,
    });
    h.event(egui::Event::ModifiersChanged(Default::default()));
    h.run_steps(2);
    let moved = texts(&h);
    assert!(moved.contains(&(5.0, "spike".into())), "{moved:?}");
    assert_eq!(h.state().browser.t0, 0.0, "a move does not pan");
    // Delete removes the selected event; ctrl+Z brings it back, ctrl+shift+Z removes it again.
    h.key_press(egui::Key::Delete);
    h.run_steps(2);
    assert_eq!(texts(&h).len(), 2);
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    h.run_steps(2);
    assert_eq!(texts(&h).len(), 3);
    h.key_press_modifiers(
        egui::Modifiers::COMMAND | egui::Modifiers::SHIFT,
        egui::Key::Z,
    );
    h.run_steps(2);
    assert_eq!(texts(&h).len(), 2);
    // Undo twice more: the move is one step, then the spike is gone... back to the drag's end.
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    h.run_steps(2);
    assert!(
        texts(&h).contains(&(7.0, "spike".into())),
        "{:?}",
        texts(&h)
    );

    // Save: a copy with the events, and a TSV.
    let copy = dir.path().join("rec_events.edf");
    let tsv = dir.path().join("rec_events.tsv");
    let state = h.state_mut();
    let rec = state.browser.rec.clone();
    state.browser.events.save_copy(&rec, &copy).unwrap();
    state.browser.events.save_tsv(&tsv).unwrap();
    let want = h.state().browser.events.list().to_vec();
    let back = ede::recording::Recording::open(&copy, &Default::default()).unwrap();
    assert_eq!(back.annotations.len(), want.len());
    for (g, w) in back.annotations.iter().zip(&want) {
        assert!(
            (g.onset - w.onset).abs() < 1e-6 && g.text == w.text,
            "{g:?} vs {w:?}"
        );
    }
    let table = std::fs::read_to_string(&tsv).unwrap();
    assert_eq!(table.lines().count(), want.len() + 1);
    assert!(table.contains("\tspike\n"));
    let original = ede::recording::Recording::open(&file, &Default::default()).unwrap();
    assert_eq!(original.annotations.len(), 1);
    assert!(!h.state().browser.events.unsaved);
}

/// File > Export the window as EDF+: the shown channels of the records under the window, bit
/// for bit, with the events inside.
#[test]
fn the_visible_window_exports_as_an_edf_plus_clip() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rec.edf");
    common::write_edf(
        &file,
        false,
        Some('C'),
        1.0,
        &common::two_signals(40, false),
        None,
        &[(12.5, "inside"), (30.0, "outside")],
    );
    let mut h = harness(EdeApp::new(
        Some(file.clone()),
        None,
        Settings::default(),
        None,
    ));
    settle(&mut h);
    h.state_mut().browser.show(10.0, Some(5.0));
    h.run_steps(2);
    assert_eq!(h.state().browser.shown_signals(), [0, 1]);
    let out = dir.path().join("clip.edf");
    h.state().browser.export_visible_clip(&out).unwrap();
    let rec = ede::recording::Recording::open(&file, &Default::default()).unwrap();
    let clip = ede::recording::Recording::open(&out, &Default::default()).unwrap();
    assert_eq!(clip.records, 5);
    for s in 0..2 {
        let mut want = vec![0f32; 500];
        rec.read(s, 1000, &mut want).unwrap();
        assert_eq!(clip.read_all(s).unwrap(), want);
    }
    let texts: Vec<(f64, &str)> = clip
        .annotations
        .iter()
        .map(|a| (a.onset, a.text.as_str()))
        .collect();
    assert_eq!(texts, [(2.5, "inside")]);
}

/// The blink view on the demo (frontal blinks built in): the visible stretch is cleaned, then
/// the whole recording; contrast changes in consecutive frames end with the newest contrast's
/// result, equal to the batch pipeline's.
fn blink_view_follows_its_controls(mut h: Harness<'_, EdeApp>) {
    use ede::app::blink_view::BlinkView;
    use ede::dsp::ica::Contrast;
    settle(&mut h);
    assert!(h.state_mut().show_view("blinks"));
    settle_view(&mut h);
    {
        let view = h.state().view_ref::<BlinkView>().unwrap();
        assert_eq!(view.error(), None);
        let (_, blinks, _) = view.shown().expect("a cleaning");
        let (t0, t1) = h.state().browser.visible_span();
        assert!(blinks.iter().all(|&t| t >= t0 - 10.0 && t <= t1 + 10.0));
    }
    h.state_mut()
        .view_mut::<BlinkView>()
        .unwrap()
        .set_whole(true);
    for c in [Contrast::Cube, Contrast::Gauss, Contrast::Tanh] {
        h.state_mut()
            .view_mut::<BlinkView>()
            .unwrap()
            .set_contrast(c);
        h.step();
    }
    settle_view(&mut h);
    let view = h.state().view_ref::<BlinkView>().unwrap();
    let (options, blinks, windows) = view.shown().unwrap();
    assert_eq!(options.fastica.contrast, Contrast::Tanh);
    let rec = ede::recording::demo::demo_recording();
    let (data, batch, _, _) =
        ede::analysis::blink::deblink_recording(&rec, options, None, false).unwrap();
    assert_eq!(windows, batch.windows.len());
    let want: Vec<f64> = batch
        .blinks
        .iter()
        .map(|b| b.peak as f64 / data.fs)
        .collect();
    assert!(want.len() >= 10, "{} blinks in the demo", want.len());
    assert_eq!(blinks, want);
}

#[test]
fn blink_view_on_the_cpu() {
    blink_view_follows_its_controls(harness(EdeApp::new(None, None, Settings::default(), None)));
}

/// Steps the harness until `done` holds (at most 60 s).
fn step_until(h: &mut Harness<'_, EdeApp>, done: impl Fn(&EdeApp) -> bool) {
    let t = std::time::Instant::now();
    while !done(h.state()) {
        assert!(t.elapsed().as_secs() < 60, "timed out");
        h.step();
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn live_view_plays_pauses_steps_and_takes_a_contrast_change() {
    use ede::app::live_view::LiveView;
    use ede::dsp::ica::Contrast;
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    assert!(h.state_mut().show_view("live"));
    h.state_mut()
        .view_mut::<LiveView>()
        .unwrap()
        .set_speed(Some(8.0));
    let progress = |app: &EdeApp| app.view_ref::<LiveView>().unwrap().progress();
    step_until(&mut h, |app| progress(app).0 >= 3);
    assert_eq!(h.state().view_ref::<LiveView>().unwrap().error(), None);
    // Pause: the hops stop coming.
    h.get_by_label("Pause").click();
    step_until(&mut h, |app| !progress(app).1);
    h.run_steps(3);
    let paused_at = progress(h.state()).0;
    std::thread::sleep(std::time::Duration::from_millis(400));
    h.run_steps(3);
    assert_eq!(progress(h.state()).0, paused_at, "paused");
    // Step: exactly one more hop, still paused.
    h.get_by_label("Step one hop").click();
    step_until(&mut h, |app| progress(app).0 == paused_at + 1);
    std::thread::sleep(std::time::Duration::from_millis(400));
    h.run_steps(3);
    assert_eq!(progress(h.state()).0, paused_at + 1);
    assert!(!progress(h.state()).1);
    // A contrast change while paused is sent to the player; playing goes on with it.
    h.state_mut()
        .view_mut::<LiveView>()
        .unwrap()
        .set_contrast(Contrast::Cube);
    h.run_steps(2);
    assert_eq!(progress(h.state()).2, Contrast::Cube);
    h.get_by_label("Play").click();
    step_until(&mut h, |app| progress(app).0 >= paused_at + 4);
    assert_eq!(h.state().view_ref::<LiveView>().unwrap().error(), None);
    // Record a few hops, stop: the file holds them, raw and cleaned.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.bdf");
    let view = |app: &EdeApp| app.view_ref::<LiveView>().unwrap().recording();
    h.state_mut()
        .view_mut::<LiveView>()
        .unwrap()
        .record(Some(path.clone()));
    step_until(&mut h, |app| view(app).0.is_some());
    let started = progress(h.state()).0;
    step_until(&mut h, |app| progress(app).0 >= started + 3);
    h.get_by_label("Stop recording").click();
    step_until(&mut h, |app| view(app).1.is_some());
    let saved = view(h.state()).1.unwrap();
    assert!(saved.contains("session.bdf"), "{saved}");
    let rec = ede::recording::Recording::open(&path, &Default::default()).unwrap();
    assert!(rec.signals.iter().any(|s| s.label.ends_with(" cln")));
    assert!(rec.signals[0].samples >= 3 * rec.signals[0].fs as usize);
    // Following: another tab shows the newest window, and moves with it.
    h.state_mut()
        .view_mut::<LiveView>()
        .unwrap()
        .set_follow(true);
    assert!(h.state_mut().show_view("scalogram"));
    let follow = |app: &EdeApp| app.view_ref::<LiveView>().unwrap().follow_span().unwrap();
    let first = follow(h.state());
    step_until(&mut h, |app| follow(app).0 > first.0);
    h.run_steps(1);
    let (t0, span) = follow(h.state());
    let (b0, b1) = h.state().browser.visible_span();
    assert!(
        (b0 - t0).abs() < 1.5 && (b1 - b0 - span).abs() < 1e-6,
        "{b0}..{b1} vs {t0}+{span}"
    );
}

/// F-keys switch montages in the Montage menu's order; the Reference menu's average and a
/// channel marked bad (B on the selected trace) change the average-referenced traces, and the
/// status line names montage and reference.
#[test]
fn montages_on_keys_references_and_bad_channels() {
    use ede::app::browser::{FUNCTION_KEYS, MontageChoice};
    use ede::dsp::montage::{BuiltIn, Reference};
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let choices = h.state().browser.montage_choices();
    let banana = choices
        .iter()
        .position(|(c, _)| *c == MontageChoice::BuiltIn(BuiltIn::DoubleBanana))
        .unwrap();
    h.key_press(FUNCTION_KEYS[banana]);
    settle(&mut h);
    assert_eq!(h.state().browser.traces.spec.derivations.len(), 18);
    // Labelled in the file's own spelling of its electrodes.
    assert_eq!(h.state().browser.trace_label(0), "Fp1-F7");
    h.get_by_label("Bipolar: double banana");
    h.key_press(FUNCTION_KEYS[0]);
    settle(&mut h);
    assert_eq!(h.state().browser.settings.montage, choices[0].0);

    h.state_mut().browser.set_reference(Reference::Average);
    settle(&mut h);
    h.get_by_label("As recorded · ref average");
    let screen = |h: &Harness<'_, EdeApp>| h.state().browser.traces.screen(0.0, 10.0, 200).columns;
    let before = screen(&h);
    // Mark the first channel bad: it leaves the average, so every other EEG trace moves, and
    // it is itself left as recorded (as MNE-Python does).
    let fp1 = h.state().browser.traces.spec.derivations[0].plus;
    h.state_mut().browser.set_bad(fp1, true);
    settle(&mut h);
    assert!(h.state().browser.rec.signals[fp1].bad);
    let after = screen(&h);
    assert_ne!(after[1], before[1], "the average moved");
    assert!(
        h.state().browser.traces.spec.derivations[0]
            .minus
            .is_empty()
    );
}

/// A user montage file (EDFbrowser's .mtg) loads into the Montage menu and draws its traces.
#[test]
fn a_montage_file_loads_and_is_offered() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lab.mtg");
    std::fs::write(
        &path,
        "<EDFbrowser_montage><signalcomposition><alias>Cz Lap</alias><polarity>1</polarity>\
         <signal><label>Cz</label><factor>1</factor></signal>\
         <signal><label>C3</label><factor>-0.5</factor></signal>\
         <signal><label>C4</label><factor>-0.5</factor></signal>\
         </signalcomposition></EDFbrowser_montage>",
    )
    .unwrap();
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    h.state_mut().browser.load_montage_file(&path);
    settle(&mut h);
    assert_eq!(h.state().browser.trace_labels(), ["Cz Lap"]);
    assert_eq!(h.state().browser.montage_choices()[0].1, "lab");
    h.get_by_label_contains("montage \"lab\" loaded");
}

/// The montage editor: a built-in montage edited as a copy, a derivation added and one
/// removed, applied as the user's own montage and shown.
#[test]
fn the_montage_editor_makes_a_user_montage() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let n = h.state().browser.traces.spec.derivations.len();
    h.state_mut().browser.edit_montage();
    h.run_steps(2);
    let rows = |h: &Harness<'_, EdeApp>| h.get_all_by_label("remove").count();
    assert_eq!(rows(&h), n);
    h.snapshot("montage_editor");
    h.get_by_label("Add a derivation").click();
    h.run_steps(2);
    h.get_by_label("Add a derivation").click();
    h.run_steps(2);
    assert_eq!(rows(&h), n + 2);
    h.get_all_by_label("remove").next().unwrap().click();
    h.run_steps(2);
    h.get_by_label("Apply").click();
    settle(&mut h);
    let b = &h.state().browser;
    assert_eq!(b.traces.spec.montage.name, "As recorded (mine)");
    assert_eq!(b.traces.spec.derivations.len(), n + 1);
    assert_eq!(b.settings.user_montages.len(), 1);
    assert_eq!(b.montage_choices()[0].1, "As recorded (mine)");
}

/// The shortcut sheet opens on `?` and draws (every glyph it uses is in the font).
#[test]
fn the_shortcut_sheet_opens_on_question_mark() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    h.key_press(egui::Key::Questionmark);
    h.run_steps(2);
    h.get_by_label("Keyboard and mouse");
    h.get_by_label("mark the selected channel bad (again: good)");
}

/// A channel type's own filter changes that type's traces only and is named in the status line.
#[test]
fn a_type_filter_changes_that_type_only() {
    use ede::recording::ChannelType;
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let screen = |h: &Harness<'_, EdeApp>| h.state().browser.traces.screen(0.0, 10.0, 300).columns;
    let before = screen(&h);
    let lowpass = ede::dsp::filter::DisplayFilter::parse("lp=15,order=4").unwrap();
    h.state_mut()
        .browser
        .set_type_filter(ChannelType::Ecg, Some(lowpass));
    settle(&mut h);
    let after = screen(&h);
    let b = &h.state().browser;
    for (d, der) in b.traces.spec.derivations.iter().enumerate() {
        let ecg = b.rec.signals[der.plus].kind == ChannelType::Ecg;
        assert_eq!(after[d] != before[d], ecg, "trace {d}");
    }
    h.get_by_label("no filter · ECG: LP 15 Hz (order 4)");
}

/// ctrl+drag on a lane makes an event of that trace's channel (EDF+'s `text@@channel`), drawn
/// on its lane; the events TSV writes it in BIDS' `channel` column.
#[test]
fn ctrl_drag_marks_an_event_on_one_channel() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let before = h.state().browser.events.list().len();
    let plot = h.state().browser.plot_rect;
    let lanes = h.state_mut().browser.page_labels();
    let row_h = plot.height() / lanes.len() as f32;
    let y = plot.top() + 2.5 * row_h;
    let ctrl = egui::Modifiers::CTRL;
    h.event(egui::Event::ModifiersChanged(ctrl));
    h.hover_at(egui::pos2(300.0, y));
    h.step();
    h.event(egui::Event::PointerButton {
        pos: egui::pos2(300.0, y),
        button: egui::PointerButton::Primary,
        pressed: true,
        modifiers: ctrl,
    });
    h.step();
    for x in [400.0, 600.0] {
        h.hover_at(egui::pos2(x, y));
        h.step();
    }
    h.drop_at(egui::pos2(600.0, y));
    h.event(egui::Event::ModifiersChanged(egui::Modifiers::NONE));
    h.run_steps(2);
    let events = h.state().browser.events.list().to_vec();
    assert_eq!(events.len(), before + 1);
    let made = events
        .iter()
        .find(|a| a.channel().is_some())
        .expect("a channel event");
    assert_eq!(made.channel(), Some(lanes[2].as_str()));
    assert_eq!(made.description(), "spike");
    assert!(made.duration > 1.0, "{made:?}");
    assert_eq!(
        h.state().browser.visible_span(),
        (0.0, 10.0),
        "a ctrl+drag does not pan"
    );
    let tsv = h.state().browser.events.tsv();
    assert!(
        tsv.starts_with("onset\tduration\ttrial_type\tchannel\n"),
        "{tsv}"
    );
    assert!(tsv.contains(&format!("\tspike\t{}\n", lanes[2])), "{tsv}");
    assert!(tsv.contains("\tn/a\n"), "the others belong to no channel");
}

/// The menu forms of the event gestures: an event at the window's centre, and one on the
/// selected channel.
#[test]
fn events_can_be_added_without_gestures() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    settle(&mut h);
    let before = h.state().browser.events.list().len();
    h.get_by_label("add at the centre").click();
    h.run_steps(2);
    let events = h.state().browser.events.list().to_vec();
    assert_eq!(events.len(), before + 1);
    assert!(
        events
            .iter()
            .any(|a| a.onset == 5.0 && a.channel().is_none())
    );
    assert!(
        h.get_by_label("… on the selected channel")
            .accesskit_node()
            .is_disabled()
    );
}
