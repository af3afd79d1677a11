//! Blink removal: the score of the truth is perfect; simulated blinks on synthetic EEG are
//! found and removed through the CLI, the output keeping its format and every untouched byte;
//! a recording without blinks comes back unchanged; bad input is a clear error and leaves no
//! file; on the EEGLAB sample the real blinks leave FPz while posterior channels and the EOG
//! barely change, and its eye movements and closure, like a simulated saccade, are left alone.

mod common;

use std::path::Path;

use common::{
    EEG_FS as FS, EEG_LABELS as LABELS, Rng, TestSignal, clean_eeg, ede, shared_data, write_edf,
};
use ede::analysis::blink::{
    Compared, DeblinkOptions, EegData, Truth, real_blink_effect, score, simulate_blinks, unblinked,
};
use ede::recording::{OpenOptions, Recording, edf_write};

fn open(path: &Path) -> Recording {
    Recording::open(path, &OpenOptions::default()).unwrap()
}

#[test]
fn the_truth_scores_perfectly() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.edf");
    clean_eeg(&clean, false, 60);
    let rec = open(&clean);
    let (signals, truth) = simulate_blinks(&rec, 3, 20.0, 100.0).unwrap();
    assert!(truth.blinks.len() >= 10, "{} blinks", truth.blinks.len());
    let sim = dir.path().join("sim.edf");
    let replaced: Vec<(usize, &[f32])> = signals.iter().map(|(i, x)| (*i, x.as_slice())).collect();
    edf_write::write_replacing(&rec, &sim, &replaced).unwrap();
    let sim_rec = open(&sim);
    let data = EegData::load(&sim_rec, &DeblinkOptions::default()).unwrap();
    let (clean_x, added) = unblinked(&sim_rec, &data, &truth);
    let scored: Vec<bool> = (0..data.data.rows)
        .map(|k| !data.channels.keep[k])
        .collect();
    let peaks: Vec<f64> = truth.blinks.iter().map(|b| b.peak_s).collect();
    let perfect = Compared {
        clean: &clean_x,
        added: &added,
        cleaned: &clean_x,
        scored: &scored,
    };
    let s = score(&truth, &peaks, data.fs, &perfect, 0.0);
    assert_eq!((s.precision, s.recall, s.f1), (1.0, 1.0, 1.0));
    // Six sources on 19 EEG channels: the minimum-variance filter nulls them and leaves the
    // 1 uV sensor noise over |a| at least (more, by the part of a in the sources' span: 1.8x
    // here), against the blinks' RMS inside them.
    let factor = |label: &str| truth.channels.iter().find(|c| c.0 == label).unwrap().1;
    let a2: f64 = (0..data.data.rows)
        .filter(|&k| scored[k])
        .map(|k| factor(&data.channels.labels[k]).powi(2))
        .sum();
    let wave = ede::dsp::blink::simulate::waveform(&truth.blinks, data.fs, data.data.cols);
    let inside: Vec<f64> = truth
        .blinks
        .iter()
        .flat_map(|b| {
            let from = (b.onset_s * data.fs).floor() as usize;
            let to = ((b.onset_s + b.duration_s) * data.fs).ceil() as usize;
            wave[from..to].to_vec()
        })
        .collect();
    let rms_in = (inside.iter().map(|v| v * v).sum::<f64>() / inside.len() as f64).sqrt();
    let white = 100.0 / (a2.sqrt() * rms_in);
    let floor = s.spatial_floor_pct.unwrap();
    assert!(
        floor > 0.9 * white && floor < 3.0 * white,
        "{floor} {white}"
    );
    // The quantization of the written file is all that separates sim - added from clean.
    assert!(
        s.residual_inside_pct < 0.1 && s.change_outside_pct < 0.1,
        "{s:?}"
    );
    // Doing nothing leaves the whole blink and finds none.
    let none = Compared {
        cleaned: &data.data,
        ..perfect
    };
    let s = score(&truth, &[], data.fs, &none, 0.0);
    assert_eq!(s.f1, 0.0);
    assert!((s.residual_inside_pct - 100.0).abs() < 0.5, "{s:?}");
    // The truth file round-trips.
    let text = serde_json::to_string(&truth).unwrap();
    let back: Truth = serde_json::from_str(&text).unwrap();
    assert_eq!(back.blinks.len(), truth.blinks.len());
    assert!(
        back.blinks
            .iter()
            .zip(&truth.blinks)
            .all(|(a, b)| (a.peak_s - b.peak_s).abs() < 1e-12)
    );
    assert_eq!(back.channels.len(), truth.channels.len());
}

#[test]
fn simulated_blinks_are_found_and_removed_through_the_cli() {
    for bdf in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let ext = if bdf { "bdf" } else { "edf" };
        let p = |name: &str| {
            dir.path()
                .join(format!("{name}.{ext}"))
                .display()
                .to_string()
        };
        clean_eeg(Path::new(&p("clean")), bdf, 60);
        let truth = dir.path().join("truth.json").display().to_string();
        let out = ede(&[
            "blinks",
            "simulate",
            &p("clean"),
            "--seed",
            "5",
            "--rate",
            "20",
            "--amplitude",
            "150",
            "--out",
            &p("sim"),
            "--truth",
            &truth,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let score_json = dir.path().join("score.json").display().to_string();
        let out = ede(&[
            "blinks",
            "score",
            &p("sim"),
            &truth,
            "--backend",
            "cpu",
            "--out",
            &score_json,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&score_json).unwrap()).unwrap();
        let f = |k: &str| s[k].as_f64().unwrap();
        assert!(f("f1") >= 0.9, "{s}");
        assert!(f("residual_inside_pct") < 30.0, "{s}");
        assert!(f("change_outside_pct") < 1.5, "{s}");

        let report = dir.path().join("report.json").display().to_string();
        let out = ede(&[
            "deblink",
            &p("sim"),
            "--backend",
            "cpu",
            "--out",
            &p("cleaned"),
            "--report",
            &report,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let r: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert!(r["blinks"].as_array().unwrap().len() >= 10, "{r}");
        for key in ["peak_s", "onset_s", "duration_s"] {
            assert!(r["blinks"][0][key].is_number());
        }
        for key in ["start_s", "components_removed", "iterations", "converged"] {
            assert!(!r["windows"][0][key].is_null(), "{key}");
        }
        assert!(r["elapsed_s"].as_f64().unwrap() > 0.0);
        // Same format and header; the kept EOG channel and every unchanged sample byte for
        // byte; the blink channels changed.
        let (a, b) = (
            std::fs::read(p("sim")).unwrap(),
            std::fs::read(p("cleaned")).unwrap(),
        );
        assert_eq!(a.len(), b.len());
        let header = 256 * (LABELS.len() + 2);
        assert_eq!(a[..header], b[..header]);
        let sim = open(Path::new(&p("sim")));
        let cleaned = open(Path::new(&p("cleaned")));
        assert_eq!(cleaned.format, sim.format);
        assert_eq!(cleaned.annotations, sim.annotations);
        let eog = LABELS.len() - 1;
        assert_eq!(sim.read_all(eog).unwrap(), cleaned.read_all(eog).unwrap());
        let fp1 = (sim.read_all(0).unwrap(), cleaned.read_all(0).unwrap());
        let changed = fp1.0.iter().zip(&fp1.1).filter(|(x, y)| x != y).count();
        assert!(
            changed > 0 && changed < fp1.0.len() / 2,
            "{changed} samples changed"
        );
    }
}

#[test]
fn a_recording_without_blinks_comes_back_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.edf");
    clean_eeg(&clean, false, 30);
    let out_path = dir.path().join("out.edf");
    let report = dir.path().join("r.json");
    let out = ede(&[
        "deblink",
        clean.to_str().unwrap(),
        "--backend",
        "cpu",
        "--out",
        out_path.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(&clean).unwrap(),
        std::fs::read(&out_path).unwrap()
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["blinks"].as_array().unwrap().len(), 0);
}

#[test]
fn bad_input_is_a_clear_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let run = |file: &Path, extra: &[&str]| {
        let out_path = dir.path().join("never.edf");
        let mut args = vec![
            "deblink",
            file.to_str().unwrap(),
            "--backend",
            "cpu",
            "--out",
            out_path.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = ede(&args);
        assert!(!out.status.success());
        assert!(!out_path.exists() && !out_path.with_extension("partial").exists());
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    // No frontal channels: the labels say nothing about positions.
    let mut rng = Rng(1);
    let unnamed: Vec<TestSignal> = ["X1", "X2", "X3"]
        .iter()
        .map(|&label| TestSignal {
            label,
            samples_per_record: FS,
            digital: (0..FS * 20)
                .map(|_| (rng.gauss() * 1000.0) as i32)
                .collect(),
            physical_min: -500.0,
            physical_max: 500.0,
            digital_min: -32768,
            digital_max: 32767,
        })
        .collect();
    let file = dir.path().join("unnamed.edf");
    write_edf(&file, false, None, 1.0, &unnamed, None, &[]);
    let e = run(&file, &[]);
    assert!(
        e.contains("no EOG or frontal channels")
            && e.contains("Fp1")
            && e.contains("--detect-channels"),
        "{e}"
    );
    assert!(run(&file, &["--detect-channels", "Fp9"]).contains("no channel named"));
    // A window longer than the recording.
    let clean = dir.path().join("clean.edf");
    clean_eeg(&clean, false, 30);
    assert!(run(&clean, &["--window", "60"]).contains("longer than the recording"));
    // A flat channel.
    let mut signals = unnamed;
    signals[1].digital.fill(7);
    let names = ["Fp1", "F3", "O1"];
    for (s, n) in signals.iter_mut().zip(names) {
        s.label = n;
    }
    let flat = dir.path().join("flat.edf");
    write_edf(&flat, false, None, 1.0, &signals, None, &[]);
    let e = run(&flat, &[]);
    assert!(e.contains("F3 is flat") && e.contains("keep"), "{e}");
    // Parameters out of range.
    assert!(run(&clean, &["--tol", "0"]).contains("tolerance"));
    assert!(run(&clean, &["--candidate-z=-1"]).contains("threshold"));
}

#[test]
fn real_blinks_leave_fpz_and_posterior_channels_barely_change() {
    let Some(data) = shared_data() else { return };
    let file = data.join("eeg/eeglab_sample_32ch_128hz.edf");
    let rec = open(&file);
    let opts = DeblinkOptions::default();
    let (eeg, result, _, _) =
        ede::analysis::blink::deblink_recording(&rec, &opts, None, false).unwrap();
    // The EOG channels detect, beside the frontal pairs.
    assert_eq!(
        eeg.channels.derivation_names(),
        ["EOG1", "EOG2", "FPz-Fz", "FPz-F3", "FPz-F4"]
    );
    assert!(result.blinks.len() >= 13, "{} blinks", result.blinks.len());
    let posterior: Vec<String> = ["O1", "Oz", "O2"].map(String::from).to_vec();
    let effect = real_blink_effect(&eeg, &result.cleaned, "FPz", &posterior).unwrap();
    // Measured against the 14 blinks the independent detector finds on FPz (one of them the
    // end of the eye closure at 208.2 s, which is left alone, others with the eye movements
    // beside them: blinks alone leave about 31 %, see BENCHMARKS). MNE (ICA fastica, 25
    // components, find_bads_eog): 8.4 %, 2.5 %, 162 samples.
    assert_eq!(effect.blinks, 14, "{effect:?}");
    // With the blink's field pooled over the recording (issue 43): 32.1 %, 0.19 %, 46 samples
    // (per-window fields: 31.4 %, 0.29 %, 111). The saccades beside the blinks at 4.1 and
    // 73.2 s stay, and with them some of the blink-locked average.
    assert!(effect.frontal_residual_pct < 33.0, "{effect:?}");
    assert!(effect.posterior_change_pct < 0.5, "{effect:?}");
    assert!(effect.samples_changed_over_20uv < 80, "{effect:?}");
    assert_eq!(effect.kept_change_pct, 0.0);
    // Those two blinks ride on saccades that begin 0.3-0.4 s before their peaks (3.7 and
    // 72.9 s): the removal begins with the blink, after the saccade, and leaves it whole. A
    // removal reaching back into the saccade put its step (up to 180 uV at FPz, 11 uV at the
    // back of the head) on every channel; now at most 10 uV.
    let labels = &eeg.channels.labels;
    for (from, to) in [(3.6, 3.98), (72.7, 73.08)] {
        let span = (from * eeg.fs) as usize..(to * eeg.fs) as usize;
        for (i, label) in labels.iter().enumerate() {
            let (a, b) = (
                &eeg.data.row(i)[span.clone()],
                &result.cleaned.row(i)[span.clone()],
            );
            let change = a
                .iter()
                .zip(b)
                .map(|(u, v)| (u - v).abs())
                .fold(0.0, f32::max);
            assert!(
                change < 15.0,
                "{label} changed by {change} uV over {from}-{to} s"
            );
        }
    }
}

/// With the eye's whole activity removed (`--remove-eye-movements`), the EEGLAB sample's
/// blink-locked average on FPz is at the floor the EEG's own average sets (MNE: 8.4 %, floor
/// 7.6 %), O1/Oz/O2 change less outside eye events than MNE's 2.5 %, and the eye closure at
/// 207.4-208.2 s and the saccade at 72.9 s go whole from FPz while the back of the head barely
/// moves: no transient where the eye has no weight.
#[test]
fn the_eyes_whole_activity_goes_without_touching_the_back_of_the_head() {
    let Some(data) = shared_data() else { return };
    let rec = open(&data.join("eeg/eeglab_sample_32ch_128hz.edf"));
    let mut opts = DeblinkOptions::default();
    opts.params.remove_eye_movements = true;
    let (eeg, result, _, _) =
        ede::analysis::blink::deblink_recording(&rec, &opts, None, false).unwrap();
    let posterior: Vec<String> = ["O1", "Oz", "O2"].map(String::from).to_vec();
    let effect = real_blink_effect(&eeg, &result.cleaned, "FPz", &posterior).unwrap();
    assert!(
        effect.frontal_residual_pct < 1.25 * effect.frontal_floor_pct,
        "{effect:?}"
    );
    assert!(effect.posterior_change_pct < 2.0, "{effect:?}");
    assert!(effect.samples_changed_over_20uv < 161, "{effect:?}");
    assert_eq!(effect.kept_change_pct, 0.0);
    let fs = eeg.fs;
    let row = |label: &str| eeg.channels.labels.iter().position(|l| l == label).unwrap();
    let span = |from: f64, to: f64| (from * fs) as usize..(to * fs) as usize;
    // The closure's plateau (about 250 uV on FPz) goes: what is left is EEG-sized.
    let (fpz, o, c) = (row("FPz"), &eeg.data, &result.cleaned);
    let level = |x: &[f32], r: std::ops::Range<usize>| {
        x[r.clone()].iter().map(|&v| v as f64).sum::<f64>() / r.len() as f64
    };
    let before = span(206.0, 207.0);
    let plateau = span(207.6, 208.0);
    let raised = |x: &[f32]| level(x, plateau.clone()) - level(x, before.clone());
    assert!(raised(o.row(fpz)) > 150.0, "{}", raised(o.row(fpz)));
    assert!(raised(c.row(fpz)).abs() < 40.0, "{}", raised(c.row(fpz)));
    // Nothing at the back of the head moves by more than a few microvolts at the closure,
    // the saccade or the events that are no eye's (57.9 s, 75.8 s).
    for (from, to) in [(56.9, 58.9), (72.0, 76.8), (206.8, 208.9)] {
        for label in ["O1", "Oz", "O2", "PO3", "POz", "PO4"] {
            let k = row(label);
            let worst = (span(from, to))
                .map(|t| (c.row(k)[t] - o.row(k)[t]).abs())
                .fold(0.0f32, f32::max);
            assert!(
                worst < 10.0,
                "{label} changed by {worst} uV within {from}-{to} s"
            );
        }
    }
}

/// The EEGLAB sample's events that are no blinks (a frontal wave at 57.9 s, an eye movement
/// at 75.8 s, bursts as large at the frontal row as at FPz at 176.3 and 235.4 s, the eye
/// closure at 207.4-208.2 s) are left alone: no channel changes there.
#[test]
fn eye_movements_and_closures_are_left_alone() {
    let Some(data) = shared_data() else { return };
    let rec = open(&data.join("eeg/eeglab_sample_32ch_128hz.edf"));
    let opts = DeblinkOptions::default();
    let (eeg, result, _, _) =
        ede::analysis::blink::deblink_recording(&rec, &opts, None, false).unwrap();
    let fs = eeg.fs;
    let spans = [
        (56.9, 58.9),
        (74.8, 76.8),
        (175.8, 176.8),
        (206.8, 208.9),
        (234.9, 235.8),
    ];
    for (from, to) in spans {
        let span = (from * fs) as usize..(to * fs) as usize;
        for k in 0..eeg.data.rows {
            let (o, c) = (eeg.data.row(k), result.cleaned.row(k));
            let worst = span
                .clone()
                .map(|t| (c[t] - o[t]).abs())
                .fold(0.0f32, f32::max);
            assert!(
                worst < 1.0,
                "{} changed by {worst} uV within {from}-{to} s",
                eeg.channels.labels[k]
            );
        }
    }
    let class_at = |t: f64| {
        (result.events.iter())
            .min_by_key(|e| (e.span.peak as f64 - t * fs).abs() as usize)
            .map(|e| e.class)
            .unwrap()
    };
    use ede::dsp::blink::classify::EventClass;
    assert_eq!(class_at(207.33), EventClass::EyeClosure);
    assert_eq!(class_at(75.95), EventClass::EyeMovement);
    assert_eq!(class_at(135.52), EventClass::Blink);
}

/// A saccade (the eyes look aside for 1.5 s: a step on the EOG and the frontopolar channels
/// and one back) among simulated blinks is classed an eye movement and left alone: no channel
/// changes within 0.5 s of either step, while the blinks are removed.
#[test]
fn a_simulated_saccade_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.edf");
    clean_eeg(&clean, false, 60);
    let rec = open(&clean);
    let (mut signals, truth) = simulate_blinks(&rec, 5, 12.0, 150.0).unwrap();
    // The saccade in the middle of the longest stretch without blinks.
    let mut peaks: Vec<f64> = truth.blinks.iter().map(|b| b.peak_s).collect();
    peaks.insert(0, 0.0);
    peaks.push(60.0);
    let (gap_from, gap_to) = (peaks.windows(2))
        .map(|w| (w[0], w[1]))
        .max_by(|a, b| (a.1 - a.0).total_cmp(&(b.1 - b.0)))
        .unwrap();
    assert!(gap_to - gap_from > 4.0, "no room for the saccade");
    let (on, off) = (
        0.5 * (gap_from + gap_to) - 0.75,
        0.5 * (gap_from + gap_to) + 0.75,
    );
    for (i, x) in signals.iter_mut() {
        let height = match rec.signals[*i].label.as_str() {
            "EOG1" => 90.0,
            "Fp1" | "Fp2" => 45.0,
            "F7" | "F8" => 20.0,
            _ => continue,
        };
        for (k, v) in x.iter_mut().enumerate() {
            let t = k as f64 / FS as f64;
            if t >= on && t < off {
                *v += height;
            }
        }
    }
    let sim = dir.path().join("sim.edf");
    let replaced: Vec<(usize, &[f32])> = signals.iter().map(|(i, x)| (*i, x.as_slice())).collect();
    edf_write::write_replacing(&rec, &sim, &replaced).unwrap();
    let sim_rec = open(&sim);
    let opts = DeblinkOptions::default();
    let (eeg, result, _, _) =
        ede::analysis::blink::deblink_recording(&sim_rec, &opts, None, false).unwrap();
    assert!(
        result.blinks.len() + 2 >= truth.blinks.len(),
        "{:?}",
        result.blinks
    );
    for step in [on, off] {
        let span = ((step - 0.5) * FS as f64) as usize..((step + 0.5) * FS as f64) as usize;
        for k in 0..eeg.data.rows {
            let (o, c) = (eeg.data.row(k), result.cleaned.row(k));
            let worst = (span.clone())
                .map(|t| (c[t] - o[t]).abs())
                .fold(0.0f32, f32::max);
            assert!(
                worst < 0.5,
                "{} changed by {worst} uV at the saccade's step at {step:.2} s",
                eeg.channels.labels[k]
            );
        }
    }
    use ede::dsp::blink::classify::EventClass;
    let at_steps: Vec<EventClass> = (result.events.iter())
        .filter(|e| {
            let t = e.span.peak as f64 / FS as f64;
            (t - on).abs() < 0.3 || (t - off).abs() < 0.3
        })
        .map(|e| e.class)
        .collect();
    assert!(
        !at_steps.is_empty() && at_steps.iter().all(|&c| c != EventClass::Blink),
        "the detector must see the saccade and not take it for a blink: {at_steps:?}"
    );
}

/// Issue 43: on blinks the removal was not designed on (`dsp::blink::families`, over MNE's
/// cleaning of the EEGLAB sample with independent noise), the batch finds them (F1 >= 0.95)
/// and leaves at most 1.5x what the ideal spatial filter with the true topography leaves
/// inside them (0.50-1.41x over every family and three seeds, BENCHMARKS), changing the EEG
/// away from them by under 1.5 %. Live mode, which fits the field from the blinks so far, leaves
/// as little once its field is settled (`pooled::SETTLED_BLINKS`: 0.59-1.43x over the blinks
/// from the 30th on; its first minute leaves more, BENCHMARKS).
#[test]
fn blinks_of_other_families_leave_about_what_the_ideal_filter_leaves() {
    use ede::analysis::blink::families::{AffineCleaning, Cleaner, independent_base, score_case};
    use ede::dsp::blink::families::{Family, draw};
    let Some(data) = shared_data() else { return };
    let rec = open(&data.join("eeg/eeglab_sample_32ch_128hz.edf"));
    let opts = DeblinkOptions::default();
    let eeg = EegData::load(&rec, &opts).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/blink_base_mne.json");
    let cleaning: AffineCleaning =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    let base = independent_base(&eeg, &cleaning, 1).unwrap();
    let (labels, eog) = (&base.channels.labels, &base.channels.eog);
    let batch = Cleaner::Batch(opts.clone());
    for family in Family::ALL {
        for amplitude in [50.0, 200.0] {
            let d = draw(family, amplitude, 1, base.duration_s(), labels, eog);
            let s = score_case(&base, &d, &batch, None).unwrap();
            assert!(s.f1 >= 0.95, "{s:?}");
            assert!(s.ratio.unwrap() <= 1.5, "{s:?}");
            assert!(s.change_outside_pct <= 1.5, "{s:?}");
        }
    }
    let d = draw(
        Family::GaussianEdges,
        100.0,
        1,
        base.duration_s(),
        labels,
        eog,
    );
    let s = score_case(&base, &d, &Cleaner::Live(opts), None).unwrap();
    assert!(
        s.f1 >= 0.95 && s.ratio.unwrap() <= 1.5 && s.ratio_settled.unwrap() <= 1.5,
        "{s:?}"
    );
    // Doing nothing leaves every blink whole: the score can fail.
    let mut none = DeblinkOptions::default();
    none.params.candidate_z = 1e6;
    let s = score_case(&base, &d, &Cleaner::Batch(none), None).unwrap();
    assert!(s.f1 == 0.0 && (s.residual_pct - 100.0).abs() < 1.0, "{s:?}");
}
