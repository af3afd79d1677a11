//! Every shared recording through the browser's page code (issue 65), rendered on wgpu
//! (lavapipe in CI): the default page and the clinical page (double banana under average
//! reference, hp 0.5, lp 35, order 4, notch 50, 7 uV/mm, 30 mm/s). The status line names what
//! is applied and what a montage leaves out; a filter no channel can have is refused and the
//! last valid one stays; traces are not cut at their lane by default.

mod common;

use common::shared_data;
use common::ui::{harness, settle};
use ede::app::browser::MontageChoice;
use ede::app::{EdeApp, Settings};
use ede::dsp::filter::DisplayFilter;
use ede::dsp::montage::{BuiltIn, Reference};
use egui_kittest::kittest::Queryable;

#[test]
fn every_shared_file_at_the_default_and_the_clinical_page() {
    let Some(data) = shared_data() else { return };
    let files = [
        "eeg/eeglab_sample_32ch_128hz.edf",
        "edf/chtypes_edf.edf",
        "edf/nihonkohden_MB0400FU.edf",
        "edf/test_edf_overlapping_annotations.edf",
        "edf/test_generator_2.edf",
        "edf/test_reduced.edf",
        "edf/subsecond_starttime.edf",
        "edf/SC4001EC-Hypnogram.edf",
        "bdf/test_bdf_stim_channel.bdf",
        "bdf/multiple_annotation_chans.bdf",
        "ecg/mitdb/100.hea",
        "vendor/nihonkohden/MB0400FU.EEG",
        "vendor/cnt/scan41_short.cnt",
        "vendor/egi/example_3.mff",
        "vendor/egi/test_egi.raw",
        "vendor/ctf/testdata_ctf_short_discontinuous.ds",
        "vendor/persyst/sub-pt1_ses-02_task-monitor_acq-ecog_run-01_clip2.lay",
        "vendor/curry/test_bdf_stim_channel Curry 8.cdt",
        "vendor/ant/CA_208/test_CA_208.cnt",
        "vendor/kit/test.sqd",
    ];
    let clinical = DisplayFilter::parse("hp=0.5,lp=35,order=4,notch=50").unwrap();
    for file in files {
        let path = data.join(file);
        let mut h = harness(EdeApp::new(Some(path), None, Settings::default(), None));
        settle(&mut h);
        assert_eq!(h.state().error(), None, "{file}");
        let b = &h.state().browser;
        // Drawn whole: a trace runs into its neighbours' lanes unless clipping is asked for.
        assert!(b.settings.overlap, "{file}: traces are cut by default");
        h.get_by_label_contains("no filter");
        if file.ends_with("Hypnogram.edf") {
            // Annotations alone: the page spans them, not 0 s.
            assert!(b.rec.time_span_s() > 20.0 * 3600.0, "{file}");
            h.get_by_label_contains("annotations ·");
            continue;
        }
        assert!(!b.trace_labels().is_empty(), "{file}");

        let b = &mut h.state_mut().browser;
        let banana = BuiltIn::DoubleBanana.montage(&b.rec).is_some();
        if banana {
            b.set_montage(MontageChoice::BuiltIn(BuiltIn::DoubleBanana));
        }
        b.set_reference(Reference::Average);
        b.set_filter(clinical);
        b.settings.calibration.uv_per_mm = Some(7.0);
        b.settings.calibration.mm_per_s = Some(30.0);
        h.run_steps(3);
        h.get_by_label_contains("HP 0.5 Hz (order 4), LP 35 Hz (order 4), notch 50 Hz");
        let b = &h.state().browser;
        if banana {
            let left_out = b.traces.spec.left_out.len();
            assert_eq!(b.trace_labels().len() + left_out, 18, "{file}");
            if left_out > 0 {
                h.get_by_label_contains(&format!("{left_out} left out"));
            }
        }

        // Refused, the reason said, the clinical filter kept and named.
        let b = &mut h.state_mut().browser;
        let mut nothing = clinical;
        nothing.highpass = Some(30.0);
        nothing.lowpass = Some(10.0);
        b.set_filter(nothing);
        assert_eq!(b.settings.filter, clinical, "{file}");
        let said = format!("{:?}", b.message);
        assert!(said.contains("at or above the low-pass"), "{file}: {said}");
        h.run_steps(2);
        h.get_by_label_contains("LP 35 Hz (order 4)");
    }
}
