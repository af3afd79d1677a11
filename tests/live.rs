//! Live mode: a recording played at full speed comes out whole, in order, and cleaned about as
//! well as the batch with the same window and hop (the bounds are stated below), and so does
//! the EEGLAB sample with the eye's whole activity removed; a parameter change takes effect at
//! the next hop boundary; a hop finished beside the next one's fit is the hop finished in
//! turn; `ede live` runs headless, paced or not.

mod common;

use std::path::Path;
use std::time::Instant;

use common::{clean_eeg, ede};
use ede::analysis::blink::{
    DeblinkOptions, Deblinker, EegData, Truth, real_blink_effect, score_cleaning, simulate_blinks,
};
use ede::analysis::live::source::FileSource;
use ede::analysis::live::{LiveOptions, play};
use ede::dsp::blink::BlinkParams;
use ede::recording::{OpenOptions, Recording, edf_write};

/// 60 s of synthetic EEG with simulated blinks (150 uV, 20 per minute): the recording, its
/// channels and the truth.
fn simulated(dir: &Path) -> (Recording, EegData, Truth) {
    simulated_for(dir, 60)
}

/// `simulated`, `seconds` long.
fn simulated_for(dir: &Path, seconds: usize) -> (Recording, EegData, Truth) {
    let clean = dir.join("clean.edf");
    clean_eeg(&clean, false, seconds);
    let rec = Recording::open(&clean, &OpenOptions::default()).unwrap();
    let (signals, truth) = simulate_blinks(&rec, 5, 20.0, 150.0).unwrap();
    let sim = dir.join("sim.edf");
    let replaced: Vec<(usize, &[f32])> = signals.iter().map(|(i, x)| (*i, x.as_slice())).collect();
    edf_write::write_replacing(&rec, &sim, &replaced).unwrap();
    let rec = Recording::open(&sim, &OpenOptions::default()).unwrap();
    let data = EegData::load(&rec, &DeblinkOptions::default()).unwrap();
    (rec, data, truth)
}

fn one_second_hops() -> (LiveOptions, DeblinkOptions) {
    let batch = DeblinkOptions {
        params: BlinkParams {
            hop_s: Some(1.0),
            ..BlinkParams::default()
        },
        ..DeblinkOptions::default()
    };
    let live = LiveOptions {
        deblink: batch.clone(),
        hop_s: 1.0,
        ..LiveOptions::default()
    };
    (live, batch)
}

#[test]
fn live_at_full_speed_cleans_like_the_batch() {
    let dir = tempfile::tempdir().unwrap();
    let (rec, data, truth) = simulated(dir.path());
    let (live_opts, batch_opts) = one_second_hops();
    let mut d = Deblinker::new(None);
    let live = play(
        &mut FileSource::new(&data, Some(&rec), &live_opts),
        &live_opts,
        &mut d,
        &mut |_, _| true,
    )
    .unwrap();
    // Every sample exactly once, in order.
    assert_eq!(live.original.data, data.data.data);
    assert_eq!(live.report.samples_out, data.data.cols as u64);
    let hop_total: f64 = live.report.hops.iter().map(|h| h.duration_s).sum();
    assert!((hop_total - data.duration_s()).abs() < 1e-9);
    // The field's blinks, hop by hop: from the third blink found on, growing with the stream.
    let fields: Vec<usize> = (live.report.hops.iter())
        .filter_map(|h| h.field_blinks)
        .collect();
    let found = live.blinks.len();
    assert!(
        fields.first() == Some(&ede::dsp::blink::pooled::MIN_BLINKS)
            && fields.windows(2).all(|w| w[0] <= w[1])
            && fields.last().is_some_and(|&n| n <= found && n + 2 >= found),
        "{fields:?} of {found} blinks"
    );
    let batch = d.run(&data, &batch_opts, &mut |_, _| true).unwrap();
    let l = score_cleaning(&rec, &data, &truth, &live.cleaned, &live.blinks, 0.0);
    let b = score_cleaning(&rec, &data, &truth, &batch.cleaned, &batch.blinks, 0.0);
    // The stated bounds: live finds the blinks the batch finds (F1 at least 0.9 and within
    // 0.05 of the batch's); cleaning each hop from one window, at its edge, leaves at most
    // 10 points more of the blinks than the batch's blend of ten windows; outside blinks it
    // changes no more than the batch's goal allows.
    assert!(
        l.f1 >= 0.9 && l.f1 >= b.f1 - 0.05,
        "live {l:?}\nbatch {b:?}"
    );
    assert!(
        l.residual_inside_pct <= b.residual_inside_pct + 10.0,
        "live {l:?}\nbatch {b:?}"
    );
    assert!(l.change_outside_pct <= 1.5, "{l:?}");
    // Samples are changed only near the blinks live mode found.
    let fs = data.fs;
    let near = |t: usize| {
        (live.blinks.iter()).any(|bl| t + fs as usize >= bl.start && t <= bl.end + fs as usize)
    };
    for c in 0..data.data.rows {
        let (o, y) = (live.original.row(c), live.cleaned.row(c));
        for t in 0..o.len() {
            assert!(o[t] == y[t] || near(t), "channel {c} changed at {t}");
        }
    }
}

/// Live mode removing the eye's whole activity on the EEGLAB sample: its windows grow from
/// 20 s to the eye's length as the stream goes on, and it cleans within stated bounds of the
/// batch. Played from five starts (0-40 s into the sample), because one start's figure moves by
/// up to a point with any change to the fits before it (the unmixing is warm-started from hop to
/// hop): on the mean, the blink-locked residual on FPz at most 10 % and within 2 points of the
/// batch's (the floor the EEG's own average sets is about 8-9 %), O1/Oz/O2 changed by at most
/// 4 % outside eye events (the batch: about 2 %, whose windows hold the whole sample from the
/// start); the kept EOG channels untouched at every start.
#[test]
fn live_removes_the_eyes_whole_activity_like_the_batch() {
    let Some(dir) = common::shared_data() else {
        return;
    };
    let rec = Recording::open(
        &dir.join("eeg/eeglab_sample_32ch_128hz.edf"),
        &OpenOptions::default(),
    )
    .unwrap();
    let mut opts = LiveOptions::default();
    opts.deblink.params.remove_eye_movements = true;
    let whole = EegData::load(&rec, &opts.deblink).unwrap();
    let posterior: Vec<String> = ["O1", "Oz", "O2"].map(String::from).to_vec();
    let starts = [0, 10, 20, 30, 40];
    let (mut live_sum, mut batch_sum, mut posterior_sum) = (0.0, 0.0, 0.0);
    for start_s in starts {
        let mut data = whole.clone();
        let from = (start_s as f64 * whole.fs) as usize;
        data.data = whole.data.block(whole.data.rows, from..whole.data.cols);
        let mut d = Deblinker::new(None);
        let live = play(
            &mut FileSource::new(&data, None, &opts),
            &opts,
            &mut d,
            &mut |_, _| true,
        )
        .unwrap();
        assert_eq!(live.original.data, data.data.data);
        let batch = d.run(&data, &opts.deblink, &mut |_, _| true).unwrap();
        let l = real_blink_effect(&data, &live.cleaned, "FPz", &posterior).unwrap();
        let b = real_blink_effect(&data, &batch.cleaned, "FPz", &posterior).unwrap();
        eprintln!(
            "from {start_s} s: FPz residual live {:.2} %, batch {:.2} %; O1/Oz/O2 changed by \
             {:.2} %, batch {:.2} %",
            l.frontal_residual_pct,
            b.frontal_residual_pct,
            l.posterior_change_pct,
            b.posterior_change_pct
        );
        assert_eq!(l.kept_change_pct, 0.0, "from {start_s} s");
        live_sum += l.frontal_residual_pct;
        batch_sum += b.frontal_residual_pct;
        posterior_sum += l.posterior_change_pct;
    }
    let n = starts.len() as f64;
    let (live, batch, posterior) = (live_sum / n, batch_sum / n, posterior_sum / n);
    assert!(
        live <= 10.0 && live <= batch + 2.0,
        "FPz residual on the mean: live {live:.2} %, batch {batch:.2} %"
    );
    assert!(
        posterior <= 4.0,
        "O1/Oz/O2 changed by {posterior:.2} % on the mean"
    );
}

#[test]
fn a_parameter_change_applies_from_the_next_hop() {
    let dir = tempfile::tempdir().unwrap();
    let (_, data, _) = simulated(dir.path());
    let (opts, _) = one_second_hops();
    let mut d = Deblinker::new(None);
    let steady = play(
        &mut FileSource::new(&data, None, &opts),
        &opts,
        &mut d,
        &mut |_, _| true,
    )
    .unwrap();
    // After hop 20 the component threshold goes out of reach: nothing is removed any more.
    let off = ede::dsp::blink::stream::StreamParams {
        blink: BlinkParams {
            component_z: 1e9,
            ..opts.deblink.params
        },
        ..opts.stream_params()
    };
    let mut count = 0;
    let changed = play(
        &mut FileSource::new(&data, None, &opts),
        &opts,
        &mut d,
        &mut |_, streamer| {
            count += 1;
            if count == 21 {
                streamer.set_params(off).unwrap();
            }
            true
        },
    )
    .unwrap();
    let boundary = (changed.report.hops[21].start_s * data.fs).round() as usize;
    let n = data.data.cols;
    let mut removed_after = false;
    for c in 0..data.data.rows {
        let (s, y, o) = (
            steady.cleaned.row(c),
            changed.cleaned.row(c),
            changed.original.row(c),
        );
        // Up to the boundary (the hop in flight included) as if nothing had changed ...
        assert_eq!(
            s[..boundary],
            y[..boundary],
            "channel {c} before the change"
        );
        // ... and from it on, the new parameters: nothing removed.
        assert_eq!(
            y[boundary..n],
            o[boundary..n],
            "channel {c} after the change"
        );
        removed_after |= s[boundary..n] != o[boundary..n];
    }
    assert!(
        removed_after,
        "the steady run removes blinks after the boundary too"
    );
}

/// Every hop of `data` through a `Streamer`, in chunks of 37 samples, overlapping or not; when
/// hop 12 comes out the hop shortens and the candidate threshold goes out of reach (as `play`'s
/// `on_hop` would change them).
fn streamed(data: &EegData, overlap: bool) -> Vec<ede::dsp::blink::stream::Hop> {
    streamed_with(data, overlap, LiveOptions::default(), 12)
}

/// `streamed` with `opts`, the change made when hop `change_at` comes out.
fn streamed_with(
    data: &EegData,
    overlap: bool,
    opts: LiveOptions,
    change_at: usize,
) -> Vec<ede::dsp::blink::stream::Hop> {
    use ede::dsp::blink::stream::Streamer;
    let mut d = Deblinker::new(None);
    let mut ica = |x: &ede::dsp::ica::Observations, warm: Option<&nalgebra::DMatrix<f64>>| {
        opts.hop_ica(&mut d, x, warm)
    };
    let mut streamer = Streamer::new(data.fs, data.channels.clone(), opts.stream_params()).unwrap();
    streamer.set_overlap(overlap);
    let changed = ede::dsp::blink::stream::StreamParams {
        blink: BlinkParams {
            candidate_z: 1e9,
            ..opts.deblink.params
        },
        hop_s: 0.75,
        ..opts.stream_params()
    };
    let mut hops = Vec::new();
    let x = &data.data;
    for from in (0..x.cols).step_by(37) {
        let chunk = x.block(x.rows, from..(from + 37).min(x.cols));
        for hop in streamer.push(&chunk, &mut ica) {
            hops.push(hop);
            if hops.len() == change_at {
                streamer.set_params(changed).unwrap();
            }
        }
    }
    hops.extend(streamer.finish(&mut ica));
    hops
}

#[test]
fn a_hop_finished_beside_the_next_fit_is_the_hop_finished_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (_, data, _) = simulated(dir.path());
    let (in_turn, beside) = (streamed(&data, false), streamed(&data, true));
    assert_eq!(in_turn.len(), beside.len());
    assert!(in_turn.len() > 30, "{} hops", in_turn.len());
    let mut emitted = 0;
    for (k, (a, b)) in in_turn.iter().zip(&beside).enumerate() {
        assert_eq!(a.start, emitted, "hop {k} follows the last");
        emitted += a.cleaned.cols as u64;
        assert_eq!(
            (a.start, a.window_start, a.window_len),
            (b.start, b.window_start, b.window_len),
            "hop {k}"
        );
        assert_eq!(a.original.data, b.original.data, "hop {k}");
        assert_eq!(a.cleaned.data, b.cleaned.data, "hop {k}");
        assert_eq!(a.blinks, b.blinks, "hop {k}");
        assert_eq!(
            (&a.removed, a.iterations),
            (&b.removed, b.iterations),
            "hop {k}"
        );
    }
    assert_eq!(emitted, data.data.cols as u64);
    // The change took effect from hop 12 on: hops of 0.75 s, without candidates.
    let last = in_turn[in_turn.len() - 2].cleaned.cols as f64 / data.fs;
    assert!((last - 0.75).abs() < 1e-9, "{last} s");
    assert!(in_turn[..12].iter().all(|h| h.candidates > 0));
    assert!(in_turn[12..].iter().all(|h| h.candidates == 0));
    assert!(in_turn[..12].iter().any(|h| !h.removed.is_empty()));
}

/// The hops of `data` streamed with `opts`, finished in turn, after checking that they come
/// out the same where each finished beside the next hop's fit.
fn streamed_alike_in_turn_and_beside(
    data: &EegData,
    opts: LiveOptions,
) -> Vec<ede::dsp::blink::stream::Hop> {
    let (in_turn, beside) = (
        streamed_with(data, false, opts.clone(), usize::MAX),
        streamed_with(data, true, opts, usize::MAX),
    );
    assert_eq!(in_turn.len(), beside.len());
    for (k, (a, b)) in in_turn.iter().zip(&beside).enumerate() {
        assert_eq!(
            (a.start, a.window_start),
            (b.start, b.window_start),
            "hop {k}"
        );
        assert_eq!(a.cleaned.data, b.cleaned.data, "hop {k}");
        assert_eq!(a.blinks, b.blinks, "hop {k}");
    }
    in_turn
}

/// With the eye's whole activity removed and windows whole from the start (72 s, the eye's
/// windows as long as a blink removal's), the hops between refits (every 3 s) are cleaned by
/// the last refit (`Everywhere`), without an ICA of their own: cleaned, and the same whether
/// each hop finished beside the next fit or in turn (a refit is waited for before the next
/// fit).
#[test]
fn hops_between_refits_of_the_eyes_whole_activity_are_cleaned_by_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let (_, data, _) = simulated_for(dir.path(), 150);
    let mut opts = LiveOptions::default();
    opts.deblink.params.remove_eye_movements = true;
    opts.deblink.params.window_s = 72.0;
    opts.deblink.params.eye_samples_per_channel_sq = 0.0;
    let in_turn = streamed_alike_in_turn_and_beside(&data, opts);
    let (refits, between): (Vec<_>, Vec<_>) = in_turn[1..].iter().partition(|h| h.ica.is_some());
    assert!(
        between.len() >= refits.len() && refits.len() > 10,
        "{} refits, {} between",
        refits.len(),
        between.len()
    );
    let changed = (between.iter())
        .filter(|h| h.cleaned.data != h.original.data)
        .count();
    assert!(
        changed * 10 >= between.len() * 9,
        "{changed} of {} changed",
        between.len()
    );
    // The kept channel (EOG1) comes out as it went in.
    let kept: Vec<usize> = (0..data.data.rows)
        .filter(|&i| data.channels.keep[i])
        .collect();
    assert!(!kept.is_empty());
    for h in &between {
        let len = h.original.cols;
        for &i in &kept {
            let row = i * len..(i + 1) * len;
            assert_eq!(h.cleaned.data[row.clone()], h.original.data[row]);
        }
    }
}

/// With the eye's whole activity removed and windows that grow (the default: 20 s at first, up
/// to 30 n^2 samples), a hop in which an eye event peaks is refitted, and the hops between are
/// cleaned by the last refit while the windows grow too; the same whether each hop finished
/// beside the next fit or in turn.
#[test]
fn while_the_eyes_windows_grow_hops_with_eye_events_are_refitted() {
    let dir = tempfile::tempdir().unwrap();
    let (_, data, _) = simulated_for(dir.path(), 150);
    let mut opts = LiveOptions::default();
    opts.deblink.params.remove_eye_movements = true;
    let in_turn = streamed_alike_in_turn_and_beside(&data, opts);
    let whole = in_turn.iter().map(|h| h.window_len).max().unwrap();
    let (mut last_refit, mut between, mut refitted_with_blinks) = (0, 0, 0);
    for h in &in_turn[1..] {
        match &h.ica {
            Some(_) => {
                last_refit = h.window_len;
                refitted_with_blinks += usize::from(h.window_len < whole && !h.blinks.is_empty());
            }
            None if last_refit < whole => {
                between += 1;
                assert!(
                    h.blinks.is_empty(),
                    "a growing hop at {} with a blink",
                    h.start
                );
                assert_ne!(h.cleaned.data, h.original.data, "hop at {}", h.start);
            }
            None => {}
        }
    }
    assert!(
        between >= 20 && refitted_with_blinks >= 5,
        "{between} growing hops between refits, {refitted_with_blinks} refitted with blinks"
    );
}

#[test]
fn ede_live_runs_headless_and_paced() {
    let dir = tempfile::tempdir().unwrap();
    let (_, data, _) = simulated(dir.path());
    let p = |name: &str| dir.path().join(name).display().to_string();
    let out = ede(&[
        "live",
        &p("sim.edf"),
        "--speed",
        "max",
        "--backend",
        "cpu",
        "--out",
        &p("cleaned.edf"),
        "--record",
        &p("session.edf"),
        "--report",
        &p("report.json"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("report.json")).unwrap()).unwrap();
    assert_eq!(r["samples_in"], r["samples_out"]);
    assert_eq!(r["samples_out"].as_u64().unwrap(), data.data.cols as u64);
    assert!(r["blinks"].as_array().unwrap().len() >= 10, "{r}");
    let hops = r["hops"].as_array().unwrap();
    // The first hop waits for a whole window (10 s), then one hop per second, and at the
    // end the half second the default lookahead held back.
    assert_eq!(hops.len(), 52);
    for key in [
        "processing_s",
        "latency_s",
        "components_removed",
        "iterations",
    ] {
        assert!(!hops[1][key].is_null(), "{key}");
    }
    let cleaned = Recording::open(Path::new(&p("cleaned.edf")), &OpenOptions::default()).unwrap();
    let sim = Recording::open(Path::new(&p("sim.edf")), &OpenOptions::default()).unwrap();
    let fp1 = |r: &Recording| r.read_all(0).unwrap();
    assert_ne!(fp1(&cleaned), fp1(&sim), "Fp1 cleaned");
    let eog = sim.signals.len() - 1;
    assert_eq!(cleaned.read_all(eog).unwrap(), sim.read_all(eog).unwrap());
    // The session's recording: every channel as played, sample for sample, then the cleaned
    // ones (EOG is kept, so it has none) as `--out` has them, and the blinks as annotations.
    let session = Recording::open(Path::new(&p("session.edf")), &OpenOptions::default()).unwrap();
    assert_eq!(session.format.to_string(), "EDF+C");
    assert_eq!(session.signals.len(), 2 * sim.signals.len() - 1);
    for (i, s) in sim.signals.iter().enumerate() {
        assert_eq!(session.signals[i].label, s.label);
        assert_eq!(
            session.read_all(i).unwrap(),
            sim.read_all(i).unwrap(),
            "{}",
            s.label
        );
    }
    for i in 0..eog {
        let j = sim.signals.len() + i;
        assert_eq!(
            session.signals[j].label,
            format!("{} cln", sim.signals[i].label)
        );
        assert_eq!(session.read_all(j).unwrap(), cleaned.read_all(i).unwrap());
    }
    let blinks = (session.annotations.iter())
        .filter(|a| a.text == "Blink")
        .count();
    assert_eq!(blinks, r["blinks"].as_array().unwrap().len());
    assert_eq!(r["record"]["samples"], r["samples_out"]);

    // Paced: 4 s at 4x real time take a second at least; a stream shorter than the window
    // comes out whole from one short window.
    let t0 = Instant::now();
    let out = ede(&[
        "live",
        &p("sim.edf"),
        "--speed",
        "4",
        "--duration",
        "4",
        "--backend",
        "cpu",
        "--report",
        &p("short.json"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t0.elapsed().as_secs_f64() >= 0.95);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(p("short.json")).unwrap()).unwrap();
    assert_eq!(r["samples_out"].as_u64().unwrap(), 4 * 128);
    assert_eq!(r["hops"].as_array().unwrap().len(), 1);

    for bad in ["0", "-1", "fast"] {
        let out = ede(&["live", &p("sim.edf"), &format!("--speed={bad}")]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("--speed"));
    }
    let out = ede(&["live", &p("sim.edf"), "--hop", "0"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("hop"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
