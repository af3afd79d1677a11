//! The ERP tab on the EEGLAB sample: the `square` epochs as `ede epochs` makes them (68 kept of
//! 80 at 150 uV), the joint plot with maps at three latencies, the epochs image sorted by the
//! `rt` that follows, and a difference wave. The frames are written to the test's temporary
//! folder (CARGO_TARGET_TMPDIR) to be looked at.

mod common;

use common::shared_data;
use common::ui::{harness, save, settle, settle_view};
use ede::app::erp_view::ErpView;
use ede::app::{EdeApp, Settings};
use eframe::egui;
use egui_kittest::Harness;

fn view<'a>(h: &'a mut Harness<'_, EdeApp>) -> &'a mut ErpView {
    h.state_mut().view_mut::<ErpView>().unwrap()
}

#[test]
fn the_erp_tab_epochs_averages_and_sorts() {
    let Some(data) = shared_data() else { return };
    let path = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let mut h = harness(EdeApp::new(Some(path), None, Settings::default(), None));
    settle(&mut h);
    assert!(h.state_mut().show_view("erp"));
    let v = view(&mut h);
    v.set_events(&["square"]);
    v.set_window(-0.2, 0.8);
    v.set_baseline(Some((Some(-0.2), Some(0.0))));
    v.set_reject_uv(150.0, 0.0);
    v.set_channel("Pz");
    v.set_sort_by(Some("rt"));
    v.set_latencies_ms(&[100.0, 300.0, 450.0]);
    settle_view(&mut h);
    let v = view(&mut h);
    assert_eq!(v.error(), None);
    let e = v.epochs().expect("epochs");
    assert_eq!(e.conditions.len(), 1);
    assert_eq!(
        (
            e.conditions[0].average.n_epochs,
            e.conditions[0].dropped.len()
        ),
        (68, 12)
    );
    assert_eq!(e.labels.len(), 32);
    save(&mut h, "erp_square.png");

    // Two conditions: the difference wave is A - B.
    view(&mut h).set_events(&["square", "rt"]);
    settle_view(&mut h);
    let e = view(&mut h).epochs().unwrap().clone();
    assert_eq!(e.conditions.len(), 2);
    assert_eq!(e.conditions[1].name, "rt");
    save(&mut h, "erp_two.png");
}

/// The browser's scalp map follows the pointer over the traces, the GFP lane runs under them,
/// and a bad channel interpolated is drawn as such.
#[test]
fn the_browser_maps_the_cursor_and_interpolates_a_bad_channel() {
    let Some(data) = shared_data() else { return };
    let path = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let mut h = harness(EdeApp::new(Some(path), None, Settings::default(), None));
    settle(&mut h);
    {
        let b = &mut h.state_mut().browser;
        b.scalp.map = true;
        b.scalp.gfp = true;
        b.set_reference("average".parse().unwrap());
        let c3 = b.rec.signal_index("C3").unwrap();
        b.set_bad(c3, true);
        b.set_interpolate_bads(true);
    }
    settle(&mut h);
    let spec = h.state().browser.traces.spec.clone();
    let c3 = spec.derivations.iter().find(|d| d.label == "C3").unwrap();
    assert!(c3.interpolated, "C3 is drawn from its neighbours");
    let plot = h.state().browser.plot_rect;
    assert!(plot.is_positive());
    // The pointer at a third of the page: the map is of that instant.
    h.hover_at(egui::pos2(
        plot.left() + plot.width() / 3.0,
        plot.center().y,
    ));
    h.run_steps(3);
    save(&mut h, "browser_cursor_map.png");
}
