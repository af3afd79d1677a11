//! The LSL round trip on the loopback interface: `ede stream` publishes a recording and
//! `ede live --lsl` cleans and records it. Every sample arrives once, in order, under its
//! label; a disconnection is reported as a stall and a gap, the stream resumes, and the samples
//! after the gap keep their times.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::clean_eeg;
use ede::recording::{OpenOptions, Recording};

/// LSL discovery configured for this machine alone (a CI machine may have no multicast).
fn lsl_config(dir: &Path) -> std::path::PathBuf {
    let cfg = dir.join("lsl.cfg");
    std::fs::write(&cfg, "[lab]\nKnownPeers = {127.0.0.1}\n").unwrap();
    cfg
}

fn ede_cmd(cfg: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ede"));
    c.env("LSLAPICFG", cfg).env("WGPU_BACKEND", "vulkan");
    c
}

/// Streams `file` under `name` with `extra` arguments into `ede live --lsl`, recording to a BDF;
/// returns the report and the recording.
fn round_trip(
    dir: &Path,
    file: &Path,
    name: &str,
    extra: &[&str],
) -> (serde_json::Value, Recording) {
    let cfg = lsl_config(dir);
    let sender = ede_cmd(&cfg)
        .args(["stream", file.to_str().unwrap(), "--name", name])
        .args(["--speed", "8", "--wait-for-consumer", "60"])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let record = dir.join(format!("{name}.bdf"));
    let report = dir.join(format!("{name}.json"));
    let live = ede_cmd(&cfg)
        .args(["live", "--lsl", name, "--backend", "cpu", "--stall", "0.4"])
        .args(["--timeout", "4", "--record", record.to_str().unwrap()])
        .args(["--report", report.to_str().unwrap()])
        .output()
        .unwrap();
    let sent = sender.wait_with_output().unwrap();
    let say = |o: &[u8]| String::from_utf8_lossy(o).into_owned();
    assert!(live.status.success(), "live: {}", say(&live.stderr));
    assert!(sent.status.success(), "stream: {}", say(&sent.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let rec = Recording::open(&record, &OpenOptions::default()).unwrap();
    (report, rec)
}

/// Every channel's samples, by label.
fn samples(rec: &Recording, label: &str) -> Vec<f32> {
    let i = (rec.signals.iter())
        .position(|s| s.label == label)
        .unwrap_or_else(|| panic!("no channel {label}"));
    let mut x = vec![0f32; rec.signals[i].samples];
    rec.read(i, 0, &mut x).unwrap();
    x
}

#[test]
fn lsl_round_trip_records_every_sample_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("eeg.edf");
    clean_eeg(&file, false, 40);
    let src = Recording::open(&file, &OpenOptions::default()).unwrap();
    let name = format!("ede-test-{}-whole", std::process::id());
    let (report, rec) = round_trip(dir.path(), &file, &name, &[]);
    let n = src.signals[0].samples;
    assert_eq!(report["samples_in"], n as u64, "{report}");
    assert_eq!(report["samples_out"], n as u64);
    assert_eq!(report["dropped_samples"], 0);
    assert_eq!(report["record"]["samples"], n as u64);
    let labels: Vec<String> = (report["channels"].as_array().unwrap().iter())
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let source_labels: Vec<String> = src.signals.iter().map(|s| s.label.clone()).collect();
    assert_eq!(labels, source_labels);
    for label in &labels {
        let (a, b) = (samples(&src, label), samples(&rec, label));
        assert!(b.len() >= n);
        for (k, (x, y)) in a.iter().zip(&b).enumerate() {
            assert!(
                (x - y).abs() < 0.01,
                "{label} sample {k}: sent {x}, recorded {y}"
            );
        }
        // The cleaned channel is there too, but for EOG, which the pipeline keeps as it is.
        let cleaned = rec
            .signals
            .iter()
            .any(|s| s.label == format!("{label} cln"));
        assert_eq!(cleaned, !label.starts_with("EOG"), "{label}");
    }
}

#[test]
fn a_disconnection_is_reported_and_the_stream_resumes_on_time() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("eeg.edf");
    clean_eeg(&file, false, 60);
    let src = Recording::open(&file, &OpenOptions::default()).unwrap();
    let name = format!("ede-test-{}-glitch", std::process::id());
    // At 8x, 8 s of stream lost is 1 s with nothing arriving: a stall. The inlet takes a
    // second or two to find the sender again; what is sent meanwhile is lost too.
    let (report, rec) = round_trip(dir.path(), &file, &name, &["--glitch", "15:8"]);
    let fs = src.signals[0].fs;
    let n = src.signals[0].samples;
    let gaps = report["gaps"].as_array().unwrap();
    assert!(!gaps.is_empty(), "{report}");
    assert!(!report["stalls"].as_array().unwrap().is_empty(), "{report}");
    let lost: u64 = gaps.iter().map(|g| g["samples"].as_u64().unwrap()).sum();
    assert!(lost >= (8.0 * fs) as u64, "{lost} samples lost");
    assert_eq!(report["dropped_samples"], lost);
    // Time goes on across the gap: the stream's length is the file's, gap included, and every
    // sample outside the gaps is the file's sample at that time.
    assert_eq!(report["samples_in"], n as u64, "{report}");
    let inside = |k: usize| {
        gaps.iter().any(|g| {
            let at = (g["at_s"].as_f64().unwrap() * fs).round() as usize;
            (at..at + g["samples"].as_u64().unwrap() as usize).contains(&k)
        })
    };
    let label = &src.signals[0].label;
    let (a, b) = (samples(&src, label), samples(&rec, label));
    let mut checked = 0;
    for k in (0..n).filter(|&k| !inside(k)) {
        assert!(
            (a[k] - b[k]).abs() < 0.01,
            "sample {k}: sent {}, recorded {}",
            a[k],
            b[k]
        );
        checked += 1;
    }
    assert!(checked > n / 2);
    let notes: Vec<&str> = rec.annotations.iter().map(|a| a.text.as_str()).collect();
    assert!(notes.iter().any(|t| t.starts_with("Gap")), "{notes:?}");
    assert!(notes.contains(&"Source stalled"), "{notes:?}");
}

/// With "other tabs follow the stream" on an LSL stream, the other tabs read a recording of
/// the stream's newest samples (an LSL stream has no file), it is made again as hops arrive,
/// the Cross-ApEn tab computes on it, and turning following off brings the file back.
#[test]
fn other_tabs_follow_an_lsl_stream() {
    use std::sync::Arc;

    use ede::app::live_view::LiveView;
    use ede::app::xapen_view::XapenView;
    use ede::app::{EdeApp, Settings};
    use ede::recording::Format;
    use egui_kittest::Harness;

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("clean.edf");
    clean_eeg(&file, false, 120);
    let cfg = lsl_config(dir.path());
    // The Live tab's inlet runs in this process. SAFETY: no other thread of this test binary
    // reads the environment meanwhile (the other tests set LSLAPICFG on their children only).
    unsafe { std::env::set_var("LSLAPICFG", &cfg) };
    let name = "ede-follow-test";
    let mut sender = ede_cmd(&cfg)
        .args(["stream", file.to_str().unwrap(), "--name", name])
        .args(["--speed", "4", "--wait-for-consumer", "60"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let app = EdeApp::new(Some(file.clone()), None, Settings::default(), None);
    let mut h = Harness::builder()
        .with_size(eframe::egui::vec2(1280.0, 800.0))
        .wgpu()
        .build_ui_state(|ui, app: &mut EdeApp| app.ui(ui), app);
    let step_until = |h: &mut Harness<'_, EdeApp>, what: &str, done: &dyn Fn(&EdeApp) -> bool| {
        let t = std::time::Instant::now();
        while !done(h.state()) {
            assert!(t.elapsed().as_secs() < 90, "timed out waiting for {what}");
            h.step();
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    };
    assert!(h.state_mut().show_view("live"));
    fn live(app: &mut EdeApp) -> &mut LiveView {
        app.view_mut::<LiveView>().unwrap()
    }
    live(h.state_mut()).use_lsl(Some(name.into()));
    live(h.state_mut()).set_follow(true);
    let hops = |app: &EdeApp| app.view_ref::<LiveView>().unwrap().progress().0;
    step_until(&mut h, "two hops", &|app| hops(app) >= 2);
    assert!(h.state_mut().show_view("xapen"));
    step_until(&mut h, "the stream's recording", &|app| {
        app.browser.rec.format == Format::Lsl
    });
    let rec = h.state().browser.rec.clone();
    let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        common::EEG_LABELS,
        "the stream's channels, in its order"
    );
    assert!(rec.duration_s() >= 10.0, "at least the first window");
    // The newest window is shown, and the matrix is computed on the stream's samples.
    let (t0, t1) = h.state().browser.visible_span();
    assert!(
        (t1 - rec.duration_s()).abs() < 1.5,
        "{t0}..{t1} of {}",
        rec.duration_s()
    );
    step_until(&mut h, "a Cross-ApEn matrix", &|app| {
        app.view_ref::<XapenView>().is_some_and(|v| v.ready())
    });
    // It moves with the stream.
    step_until(&mut h, "a newer copy", &|app| {
        !Arc::ptr_eq(&app.browser.rec, &rec)
    });
    // Following off: the file again.
    live(h.state_mut()).set_follow(false);
    h.run_steps(2);
    assert_eq!(h.state().browser.rec.path.as_deref(), Some(file.as_path()));
    let _ = sender.kill();
    let _ = sender.wait();
}
