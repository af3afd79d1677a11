//! No edit lost: opening another recording or closing the window with unsaved events or bad
//! marks asks save / discard / cancel, and edits survive a SIGKILL through the autosave.

mod common;

use ede::app::{EdeApp, Settings};
use ede::recording::Annotation;
use eframe::egui;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

fn harness(app: EdeApp) -> Harness<'static, EdeApp> {
    Harness::builder()
        .with_size(egui::vec2(1280.0, 800.0))
        .build_ui_state(|ui, app: &mut EdeApp| app.ui(ui), app)
}

fn spike(at: f64) -> Annotation {
    Annotation {
        onset: at,
        duration: 0.0,
        text: "spike".into(),
    }
}

fn has_spike(h: &Harness<'_, EdeApp>, at: f64) -> bool {
    (h.state().browser.events.list().iter())
        .any(|a| a.text == "spike" && (a.onset - at).abs() < 1e-9)
}

#[test]
fn opening_another_recording_asks_first() {
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    h.run_steps(2);
    h.state_mut().browser.events.add(spike(3.25));
    h.state_mut().show(ede::recording::demo::demo_recording());
    h.run_steps(2);
    h.get_by_label("Unsaved edits");
    h.get_by_label("Cancel").click();
    h.run_steps(2);
    assert!(has_spike(&h, 3.25), "cancel keeps the edits");
    assert!(h.state().guard.pending.is_none());
    // Asked again, discarding opens the other recording.
    h.state_mut().show(ede::recording::demo::demo_recording());
    h.run_steps(2);
    h.get_by_label("Discard").click();
    h.run_steps(2);
    assert!(!has_spike(&h, 3.25));
    assert!(!h.state().browser.events.unsaved);
}

/// A close request with unsaved events and a bad mark is held back; saving writes the BIDS
/// sidecars beside the recording (a BIDS run), which open with it again, and then the window
/// closes.
#[test]
fn closing_asks_and_saves_beside_the_recording() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("sub-01").join("eeg");
    std::fs::create_dir_all(&dir).unwrap();
    let edf = dir.join("sub-01_task-rest_eeg.edf");
    common::write_edf(
        &edf,
        false,
        Some('C'),
        1.0,
        &common::two_signals(10, false),
        None,
        &[],
    );
    let mut h = harness(EdeApp::new(
        Some(edf.clone()),
        None,
        Settings::default(),
        None,
    ));
    h.run_steps(2);
    h.state_mut().browser.events.add(spike(1.5));
    h.state_mut().browser.set_bad(1, true);
    h.input_mut()
        .viewports
        .entry(egui::ViewportId::ROOT)
        .or_default()
        .events
        .push(egui::ViewportEvent::Close);
    h.run_steps(2);
    h.get_by_label("Unsaved edits");
    assert!(!h.state().guard.close_confirmed, "the close is held back");
    h.get_by_label("Save beside the recording").click();
    h.run_steps(2);
    assert!(h.state().guard.close_confirmed, "saved, the window closes");
    let events = std::fs::read_to_string(dir.join("sub-01_task-rest_events.tsv")).unwrap();
    assert!(events.contains("1.500000\t0.000000\tspike"), "{events}");
    let channels = std::fs::read_to_string(dir.join("sub-01_task-rest_channels.tsv")).unwrap();
    assert_eq!(
        channels.lines().filter(|l| l.ends_with("\tbad")).count(),
        1,
        "{channels}"
    );
    // Opened again, the recording has the saved events and its bad channel.
    let rec = ede::recording::bids::open_file(&edf, &Default::default()).unwrap();
    assert!(rec.signals[1].bad);
    assert!(rec.annotations.iter().any(|a| a.text == "spike"));
}

/// The crash test: a child process (this test binary again) makes an edit in the app and
/// waits; it is killed with SIGKILL, and the next app started on the autosave offers the edit
/// back.
#[test]
fn an_edit_survives_sigkill() {
    const CHILD: &str = "EDE_TEST_CRASH_CHILD";
    if let Some(dir) = std::env::var_os(CHILD) {
        let mut app = EdeApp::new(None, None, Settings::default(), None);
        app.guard.enable(dir.clone().into());
        let mut h = harness(app);
        h.run_steps(2);
        h.state_mut().browser.events.add(spike(7.75));
        h.state_mut().browser.set_bad(3, true);
        for _ in 0..100 {
            h.step();
            if std::path::Path::new(&dir).join("autosave.json").exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        println!("edited");
        std::thread::sleep(std::time::Duration::from_secs(120));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "an_edit_survives_sigkill",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, dir.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::BufRead;
    let out = std::io::BufReader::new(child.stdout.take().unwrap());
    assert!(
        out.lines()
            .map_while(Result::ok)
            .any(|l| l.contains("edited")),
        "the child made its edit"
    );
    child.kill().unwrap(); // SIGKILL on Unix: no destructor, no exit handler runs
    child.wait().unwrap();
    let mut app = EdeApp::new(None, None, Settings::default(), None);
    app.guard.enable(dir.path().to_path_buf());
    let mut h = harness(app);
    h.run_steps(2);
    h.get_by_label("Recover unsaved edits?");
    h.get_by_label("Recover").click();
    h.run_steps(2);
    assert!(has_spike(&h, 7.75), "the event is back");
    assert!(h.state().browser.rec.signals[3].bad, "the bad mark is back");
    assert!(h.state().browser.events.unsaved, "and still to be saved");
}
