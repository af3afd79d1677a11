//! The ICA tab on the EEGLAB sample: every component's map in the grid, the eye component
//! marked by EOG1, rejection by key with undo, a contrast change that refits while the grid
//! keeps each matched component's place and mark, the cleaned page, and Picard refitting. The frames are written
//! to the test's temporary folder (CARGO_TARGET_TMPDIR) to be looked at.

mod common;

use common::shared_data;
use common::ui::{harness, save, settle, settle_view};
use ede::analysis::ica::IcaMethod;
use ede::analysis::ica::marks::match_maps;
use ede::app::ica_view::IcaView;
use ede::app::{EdeApp, Settings};
use ede::dsp::ica::Contrast;
use eframe::egui;
use egui_kittest::Harness;

fn view<'a>(h: &'a Harness<'_, EdeApp>) -> &'a IcaView {
    h.state().view_ref::<IcaView>().unwrap()
}

#[test]
fn the_ica_tab_shows_judges_refits_and_cleans() {
    let Some(data) = shared_data() else { return };
    let path = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let mut h = harness(EdeApp::new(Some(path), None, Settings::default(), None));
    settle(&mut h);
    assert!(h.state_mut().show_view("ica"));
    settle_view(&mut h);
    assert_eq!(view(&h).error(), None);
    let before = view(&h).decomposition().unwrap().clone();
    // Average reference, 1 Hz high-pass: 30 EEG channels, rank 29.
    assert_eq!((before.labels.len(), before.components()), (30, 29));
    save(&mut h, "ica_grid.png");

    // The frontal component EOG1 marks is rejected by R, undone by Ctrl+Z, rejected again.
    let eye = (0..before.components())
        .max_by(|&a, &b| {
            before.mixing[(0, a)]
                .abs()
                .total_cmp(&before.mixing[(0, b)].abs())
        })
        .unwrap();
    // ICLabel classes that frontal component as an eye.
    let labels = view(&h).iclabel().unwrap().unwrap().to_vec();
    assert_eq!(labels.len(), 29);
    let top = (0..7).max_by(|&a, &b| labels[eye][a].total_cmp(&labels[eye][b]));
    assert_eq!(top, Some(2), "IC{eye}: {:?}", labels[eye]);
    h.state_mut().view_mut::<IcaView>().unwrap().select(eye);
    h.step();
    h.key_press(egui::Key::R);
    h.run_steps(2);
    assert_eq!(view(&h).rejected(), [eye]);
    h.key_press_modifiers(egui::Modifiers::COMMAND, egui::Key::Z);
    h.run_steps(2);
    assert!(view(&h).rejected().is_empty(), "undone");
    h.key_press(egui::Key::R);
    h.run_steps(2);
    let other = if eye == 5 { 6 } else { 5 };
    h.state_mut().view_mut::<IcaView>().unwrap().select(other);
    h.step();
    h.key_press(egui::Key::R);
    h.run_steps(2);
    let mut both = vec![eye, other];
    both.sort_unstable();
    assert_eq!(view(&h).rejected(), both);
    h.state_mut().view_mut::<IcaView>().unwrap().select(eye);
    h.run_steps(3);
    save(&mut h, "ica_properties.png");

    // The exp contrast refits; the components that match keep their places and marks.
    h.state_mut()
        .view_mut::<IcaView>()
        .unwrap()
        .set_contrast(Contrast::Gauss);
    h.step();
    settle_view(&mut h);
    let after = view(&h).decomposition().unwrap().clone();
    assert_ne!(after.fingerprint(), before.fingerprint(), "refitted");
    let pairs = match_maps(&before.mixing, &after.mixing);
    for &k in &view(&h).rejected() {
        let (_, j, r) = pairs.iter().find(|p| p.0 == k).copied().unwrap();
        assert_eq!(j, k, "a rejected component kept its place (|r| {r:.3})");
        assert!(r >= 0.9, "IC{k} still the same map: |r| {r:.3}");
    }
    assert!(view(&h).rejected().contains(&eye), "the eye stays rejected");

    h.state_mut()
        .view_mut::<IcaView>()
        .unwrap()
        .show_mode("cleaned");
    h.run_steps(3);
    save(&mut h, "ica_cleaned.png");
    h.state_mut()
        .view_mut::<IcaView>()
        .unwrap()
        .show_mode("sources");
    h.run_steps(3);
    save(&mut h, "ica_sources.png");

    // Picard-O refits from the shown fit; the eye keeps its place and its mark.
    let v = h.state_mut().view_mut::<IcaView>().unwrap();
    v.set_method(IcaMethod::Picard);
    v.show_mode("components");
    h.step();
    settle_view(&mut h);
    let picard = view(&h).decomposition().unwrap().clone();
    assert_eq!(picard.settings.method, IcaMethod::Picard);
    assert!(picard.converged, "{} iterations", picard.iterations);
    assert!(view(&h).rejected().contains(&eye), "the eye stays rejected");
    save(&mut h, "ica_picard.png");
}
