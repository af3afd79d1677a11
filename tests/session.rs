//! Sessions: the state of a reading saved as JSON and put back, and a reopened file offered
//! the state it was last left in.

mod common;

use ede::app::browser::{MontageChoice, Session};
use ede::app::hermite_view::HermiteView;
use ede::app::scalogram_view::ScalogramView;
use ede::app::{EdeApp, Settings};
use ede::dsp::filter::DisplayFilter;
use ede::dsp::montage::{BuiltIn, Reference};
use eframe::egui;
use egui_kittest::Harness;
use egui_kittest::kittest::Queryable;

fn harness(app: EdeApp) -> Harness<'static, EdeApp> {
    Harness::builder()
        .with_size(egui::vec2(1280.0, 800.0))
        .build_ui_state(|ui, app: &mut EdeApp| app.ui(ui), app)
}

fn edf(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    common::write_edf(
        &path,
        false,
        Some('C'),
        1.0,
        &common::two_signals(120, false),
        None,
        &[],
    );
    path
}

/// A reading state that differs from the defaults everywhere a session keeps.
fn read_somehow(h: &mut Harness<'_, EdeApp>) {
    let b = &mut h.state_mut().browser;
    b.set_reference(Reference::Channels(vec![b.rec.signals[1].label.clone()]));
    b.set_filter(DisplayFilter::parse("hp=0.5,lp=30,order=4,zero-phase").unwrap());
    b.set_bad(0, true);
    b.show(42.0, Some(20.0));
    b.settings.gain = 2.5;
    h.run_steps(2);
}

#[test]
fn a_session_round_trips_through_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = edf(dir.path(), "a.edf");
    let mut h = harness(EdeApp::new(
        Some(file.clone()),
        None,
        Settings::default(),
        None,
    ));
    h.run_steps(2);
    read_somehow(&mut h);
    // Two tabs' own parameters: the one shown and one opened before.
    let app = h.state_mut();
    app.view_mut::<HermiteView>().unwrap().set_order(12);
    app.view_mut::<ScalogramView>().unwrap().set_omega0(9.0);
    app.show_view("scalogram");
    h.run_steps(2);
    let saved = h.state().session();
    let json = saved.to_json();
    let back: Session = serde_json::from_str(&json).unwrap();
    assert_eq!(back, saved);
    assert_eq!(back.tab, "scalogram");
    assert_eq!((back.start_s, back.span_s), (42.0, 20.0));
    assert_eq!(back.views["scalogram"]["omega0"], 9.0);
    assert_eq!(back.views["beats"]["order"], 12);

    let mut fresh = harness(EdeApp::new(None, None, Settings::default(), None));
    fresh.run_steps(2);
    fresh.state_mut().open_session(&back);
    fresh.run_steps(2);
    let again = fresh.state().session();
    assert_eq!(again, saved, "the session opened is the session saved");
    // The tab not shown gets its parameters when it is made.
    fresh.state_mut().view_mut::<HermiteView>().unwrap();
    assert_eq!(fresh.state().session(), saved);
    assert!(fresh.state().browser.rec.signals[0].bad);
    assert_eq!(fresh.state().browser.visible_span(), (42.0, 62.0));
}

#[test]
fn a_sessions_odd_view_parameters_are_passed_over_or_clamped() {
    let dir = tempfile::tempdir().unwrap();
    let file = edf(dir.path(), "a.edf");
    let mut session = Session {
        file: Some(file),
        tab: "scalogram".into(),
        ..Session::default()
    };
    session.views.insert(
        "scalogram".into(),
        serde_json::json!({"omega0": "nine", "voices": 12}),
    );
    let mut beats = serde_json::json!({
        "signal": "no such channel", "filter": "default", "detector": false, "order": 100000,
        "sigmas": 0, "range_ms": [500.0, 1.0], "backend": "cpu",
        "scatter": {"coefficients": [70, 3]}, "by_mse": true, "colours": "Viridis",
        "panel_height": 1e9
    });
    session.views.insert("beats".into(), beats.clone());
    let mut h = harness(EdeApp::new(None, None, Settings::default(), None));
    h.run_steps(2);
    h.state_mut().open_session(&session);
    h.run_steps(2);
    let app = h.state_mut();
    app.view_mut::<HermiteView>().unwrap();
    let got = app.session();
    // Parameters that do not parse leave the view as it was; numbers are clamped.
    assert_eq!(got.views["scalogram"]["omega0"], 6.0);
    beats["signal"] = got.views["beats"]["signal"].clone();
    beats["order"] = 40.into();
    beats["sigmas"] = 2.into();
    beats["range_ms"] = serde_json::json!([100.0, 100.0]);
    beats["scatter"] = serde_json::json!({"coefficients": [39, 3]});
    beats["panel_height"] = 900.0.into();
    assert_eq!(got.views["beats"], beats);
}

#[test]
fn a_reopened_file_is_offered_its_last_state() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (edf(dir.path(), "a.edf"), edf(dir.path(), "b.edf"));
    let mut h = harness(EdeApp::new(
        Some(a.clone()),
        None,
        Settings::default(),
        None,
    ));
    h.run_steps(2);
    read_somehow(&mut h);
    // Marked bad but not saved: leaving asks first; discard the mark, keep the rest.
    h.state_mut().browser.set_bad(0, false);
    h.state_mut()
        .browser
        .set_montage(MontageChoice::BuiltIn(BuiltIn::AsRecorded));
    h.state_mut().open(b);
    h.run_steps(2);
    assert!(h.state().offered_session.is_none(), "b was never read");
    h.state_mut().open(a);
    h.run_steps(2);
    h.get_by_label("Restore that state").click();
    h.run_steps(2);
    let s = h.state().session();
    assert_eq!((s.start_s, s.span_s), (42.0, 20.0));
    assert_eq!(
        s.filter,
        DisplayFilter::parse("hp=0.5,lp=30,order=4,zero-phase").unwrap()
    );
    assert!(matches!(s.reference, Reference::Channels(_)));
    assert!(h.state().offered_session.is_none());
}
