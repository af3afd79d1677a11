//! `ede bench live`: live mode's speed goals, in one run, with its defaults (window 10 s,
//! lengthened to 2.5 n^2 samples; hop 1 s; 10 FastICA iterations per hop after a cold first
//! window of 200):
//!
//! - the EEGLAB sample (32 channels at 128 Hz) played at full speed: processing per hop and
//!   the real-time factor;
//! - the same played at 1x for `--paced` seconds: latency from a sample's arrival to its
//!   cleaned output (goal: one hop plus 50 ms);
//! - 64 channels at 512 Hz at full speed: the sample upsampled 4x (linear interpolation), its
//!   32 channels kept (blinks and labels included) and 32 more mixed from them by a fixed
//!   random matrix with 1 % independent noise; and the same with ICA of its 24 leading
//!   principal components;
//! - with the eye's whole activity removed (`--remove-eye-movements`): the EEGLAB sample and
//!   the 64 x 512 Hz stream, each played twice over, so that their windows reach their 240 s;
//! - the Live tab's frames on both streams while it plays them at maximum speed and at 1x
//!   (goal: under 16 ms at maximum speed).

use std::path::PathBuf;
use std::time::Instant;

use serde::Serialize;

use super::Stats;
use crate::analysis::blink::{Deblinker, EegData};
use crate::analysis::live::source::FileSource;
use crate::analysis::live::{LiveOptions, play};
use crate::analysis::xapen::cpu_name;
use crate::cli::write_json;
use crate::dsp::blink::Channels;
use crate::dsp::ica::Observations;
use crate::recording::{Format, OpenOptions, Recording, in_memory};

#[derive(Debug, clap::Args)]
pub struct LiveBenchArgs {
    #[arg(
        long,
        default_value = "../shared/data/eeg/eeglab_sample_32ch_128hz.edf"
    )]
    pub record: PathBuf,
    /// Seconds played at 1x for the latency figures (the first 20 s fill the window).
    #[arg(long, default_value_t = 40.0)]
    pub paced: f64,
    /// Seconds of the 64 x 512 Hz stream played.
    #[arg(long, default_value_t = 60.0)]
    pub many: f64,
    /// Seconds of the 64 x 512 Hz stream played with the eye's whole activity removed (its
    /// windows reach their 240 s at 240 s).
    #[arg(long, default_value_t = 300.0)]
    pub eye: f64,
    /// Seconds of Live-tab frames measured while it plays at maximum speed (the EEGLAB sample
    /// lasts about 3 s at that speed), and again at 1x.
    #[arg(long, default_value_t = 3.0)]
    pub frames: f64,
    /// Only the runs whose names contain this (e.g. "64ch-512hz-full"), and no frames unless
    /// it names "frames": for profiling one of them.
    #[arg(long)]
    pub only: Option<String>,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Run {
    name: String,
    channels: usize,
    fs: f64,
    window_s: f64,
    hop_s: f64,
    speed: Option<f64>,
    played_s: f64,
    hops: usize,
    processing_s: Stats,
    /// The hop over its median processing.
    real_time_factor: f64,
    /// The hop over its mean processing: the throughput, where some hops do more than others
    /// (the eye mode's refits).
    mean_real_time_factor: f64,
    /// The mean processing of the hops whose windows still grew (left out of the figures
    /// above), where there were any.
    growing_mean_s: Option<f64>,
    latency_s: Stats,
    late_hops: usize,
    median_iterations: usize,
    blinks: usize,
}

#[derive(Debug, Serialize)]
struct Report {
    cpu: String,
    runs: Vec<Run>,
    /// At maximum speed, and at 1x (the pipeline nearly idle: what the machine itself does to
    /// frames).
    frames: Vec<Frames>,
}

/// The Live tab's frames (the CPU work of an egui pass and its tessellation, as `ede bench io`
/// measures them) on `stream` while its player runs at `speed` (maximum speed when `None`) on
/// the other core. The first frame that draws the whole tab (its fonts, maps and plots laid out for the
/// first time) is given apart.
#[derive(Debug, Serialize)]
struct Frames {
    stream: String,
    speed: Option<f64>,
    window_px: [f32; 2],
    first_frame_s: f64,
    frame_s: Stats,
    /// Frames over 16 ms (60 Hz), and the slowest 1 % from this time.
    over_16ms: usize,
    p99_s: f64,
    /// Hops the player cleaned meanwhile.
    hops: usize,
    seconds: f64,
}

fn live_frames(
    (stream, rec): (&str, &Recording),
    seconds: f64,
    speed: Option<f64>,
) -> anyhow::Result<Frames> {
    use crate::app::live_view::LiveView;
    use crate::app::{EdeApp, Settings};
    use eframe::egui;
    let mut app = EdeApp::new(None, None, Settings::default(), None);
    app.show(rec.clone());
    anyhow::ensure!(app.show_view("live"), "no Live tab");
    let view = app
        .view_mut::<LiveView>()
        .ok_or(anyhow::anyhow!("no Live tab"))?;
    view.set_speed(speed);
    let ctx = egui::Context::default();
    let size = egui::vec2(1600.0, 1000.0);
    let progress = |app: &EdeApp| app.view_ref::<LiveView>().map_or(0, |v| v.progress().0);
    // Until the first window is out (it fills at once), then measured.
    let t = Instant::now();
    while progress(&app) < 2 && t.elapsed().as_secs_f64() < 60.0 {
        super::io::run_frame(&ctx, &mut app, size);
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let first_frame_s = super::io::run_frame(&ctx, &mut app, size);
    let (start, first) = (Instant::now(), progress(&app));
    let mut times = Vec::new();
    while start.elapsed().as_secs_f64() < seconds {
        times.push(super::io::run_frame(&ctx, &mut app, size));
    }
    let hops = progress(&app) - first;
    let over_16ms = times.iter().filter(|&&t| t > 0.016).count();
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let p99_s = sorted.get(sorted.len() * 99 / 100).copied().unwrap_or(0.0);
    eprintln!(
        "live tab on {stream} at {}: first frame {:.1} ms, then {} frames, {:.1} ms median, {:.1} ms max, \
         {:.1} ms at the 99th percentile, {over_16ms} over 16 ms; {hops} hops meanwhile",
        speed.map_or("max speed".into(), |v| format!("{v}x")),
        first_frame_s * 1e3,
        times.len(),
        Stats::of(times.clone()).median * 1e3,
        Stats::of(times.clone()).max * 1e3,
        p99_s * 1e3,
    );
    Ok(Frames {
        stream: stream.to_string(),
        speed,
        window_px: [size.x, size.y],
        first_frame_s,
        frame_s: Stats::of(times),
        over_16ms,
        p99_s,
        hops,
        seconds,
    })
}

fn measure(name: &str, data: &EegData, opts: &LiveOptions) -> anyhow::Result<Run> {
    let mut d = Deblinker::new(None);
    let s = play(
        &mut FileSource::new(data, None, opts),
        opts,
        &mut d,
        &mut |_, _| true,
    )?;
    let r = &s.report;
    // The first hop waits for a whole window and covers it: leave it out of the per-hop
    // figures (it is in the report's hops), and so are the hops whose windows still grow (the
    // eye mode's, up to minutes).
    let longest = r.hops.iter().map(|h| h.window_s).fold(0.0, f64::max);
    let grown = (r.hops.iter().skip(1))
        .position(|h| h.window_s >= longest - 1e-9)
        .unwrap_or(0);
    let steady: Vec<_> = r.hops.iter().skip(1 + grown).collect();
    anyhow::ensure!(!steady.is_empty(), "{name}: too short for two hops");
    let mut its: Vec<usize> = steady.iter().map(|h| h.iterations).collect();
    its.sort_unstable();
    let processing = Stats::of(steady.iter().map(|h| h.processing_s).collect());
    let mean_of = |hops: &[&crate::analysis::live::HopReport]| {
        (!hops.is_empty())
            .then(|| hops.iter().map(|h| h.processing_s).sum::<f64>() / hops.len() as f64)
    };
    let mean = mean_of(&steady).unwrap_or(f64::NAN);
    let growing: Vec<_> = r.hops.iter().skip(1).take(grown).collect();
    let run = Run {
        name: name.to_string(),
        channels: data.data.rows,
        fs: data.fs,
        window_s: longest,
        hop_s: opts.hop_s,
        speed: opts.speed,
        played_s: r.samples_out as f64 / data.fs,
        hops: r.hops.len(),
        real_time_factor: opts.hop_s / processing.median,
        mean_real_time_factor: opts.hop_s / mean,
        growing_mean_s: mean_of(&growing),
        processing_s: processing,
        latency_s: Stats::of(steady.iter().map(|h| h.latency_s).collect()),
        late_hops: r.late_hops,
        median_iterations: its[its.len() / 2],
        blinks: r.blinks.len(),
    };
    eprintln!(
        "{name}: {} ch at {} Hz, window {:.0} s: {:.1} ms per 1 s hop median ({:.1} max, {:.1} \
         mean), {:.0}x real time ({:.0}x on the mean); latency {:.3} s median ({:.3} max); {} \
         late; {} iterations median",
        run.channels,
        run.fs,
        run.window_s,
        run.processing_s.median * 1e3,
        run.processing_s.max * 1e3,
        mean * 1e3,
        run.real_time_factor,
        run.mean_real_time_factor,
        run.latency_s.median,
        run.latency_s.max,
        run.late_hops,
        run.median_iterations
    );
    if let Some(g) = run.growing_mean_s {
        eprintln!(
            "{name}: while the windows grew, {:.1} ms per hop mean ({:.0}x)",
            g * 1e3,
            opts.hop_s / g
        );
    }
    Ok(run)
}

/// 64 channels at 4x the rate: see the module's notes.
fn many_channels(data: &EegData) -> anyhow::Result<EegData> {
    let (x, up) = (&data.data, 4usize);
    let n = x.cols * up;
    let upsampled = |row: &[f32]| -> Vec<f32> {
        (0..n)
            .map(|k| {
                let (i, f) = (k / up, (k % up) as f32 / up as f32);
                let next = row[(i + 1).min(row.len() - 1)];
                row[i] * (1.0 - f) + next * f
            })
            .collect()
    };
    let mut rows: Vec<Vec<f32>> = (0..x.rows).map(|i| upsampled(x.row(i))).collect();
    let mut labels = data.channels.labels.clone();
    let mut rng = crate::recording::demo::SplitMix(11);
    for k in 0..64usize.saturating_sub(x.rows) {
        let w: Vec<f32> = (0..x.rows).map(|_| rng.gauss() as f32 / 4.0).collect();
        let mut row = vec![0.0f32; n];
        for (i, &wi) in w.iter().enumerate() {
            row.iter_mut()
                .zip(&rows[i])
                .for_each(|(v, &s)| *v += wi * s);
        }
        let scale = (row.iter().map(|v| v * v).sum::<f32>() / n as f32).sqrt();
        row.iter_mut()
            .for_each(|v| *v += 0.01 * scale * rng.gauss() as f32);
        rows.push(row);
        labels.push(format!("X{}", k + 1));
    }
    let channels = Channels::resolve(&labels, None, None, None)?;
    Ok(EegData {
        signals: Vec::new(),
        fs: data.fs * up as f64,
        scale: vec![1.0; rows.len()],
        positions: vec![None; rows.len()],
        channels,
        data: Observations::from_rows(&rows),
    })
}

/// `data` followed by itself.
fn repeated(data: &EegData) -> EegData {
    let x = &data.data;
    let rows: Vec<Vec<f32>> = (0..x.rows).map(|i| x.row(i).repeat(2)).collect();
    EegData {
        signals: data.signals.clone(),
        scale: data.scale.clone(),
        positions: data.positions.clone(),
        channels: data.channels.clone(),
        fs: data.fs,
        data: Observations::from_rows(&rows),
    }
}

/// `data` as a recording the Live tab can open (in memory, starting when `like` starts).
fn as_recording(data: &EegData, like: &Recording) -> Recording {
    let x = &data.data;
    let signals = (data.channels.labels.iter())
        .map(|l| (l.clone(), "uV".to_string(), data.fs))
        .collect();
    let rows = (0..x.rows).map(|i| x.row(i).to_vec()).collect();
    let path = PathBuf::from("64 x 512 Hz stream");
    in_memory(
        Some(path),
        Format::Csv,
        like.start,
        signals,
        rows,
        vec![],
        vec![],
    )
}

pub fn run(args: &LiveBenchArgs) -> anyhow::Result<()> {
    let rec = Recording::open(&args.record, &OpenOptions::default())?;
    let opts = LiveOptions::default();
    let data = EegData::load(&rec, &opts.deblink)?;
    let wanted = |name: &str| args.only.as_deref().is_none_or(|o| name.contains(o));
    let mut runs = Vec::new();
    let mut run = |name: &str, data: &EegData, opts: &LiveOptions| -> anyhow::Result<()> {
        if wanted(name) {
            runs.push(measure(name, data, opts)?);
        }
        Ok(())
    };
    run("eeglab-full-speed", &data, &opts)?;
    let paced = LiveOptions {
        speed: Some(1.0),
        duration_s: Some(args.paced),
        ..opts.clone()
    };
    run("eeglab-1x", &data, &paced)?;
    let many = many_channels(&data)?;
    let fast = LiveOptions {
        duration_s: Some(args.many),
        ..opts.clone()
    };
    run("64ch-512hz-full-speed", &many, &fast)?;
    // The unmixing fitted on every sample (4x the default's 2560 per window) ...
    let mut whole = fast.clone();
    whole.deblink.fit_samples = None;
    run("64ch-512hz-fit-on-all-samples", &many, &whole)?;
    // ... and on the 24 leading principal components: a quarter of the products per
    // iteration.
    let mut fewer = fast.clone();
    fewer.deblink.fastica.components = Some(24);
    run("64ch-512hz-24-components", &many, &fewer)?;
    // The eye's whole activity: windows of 30 n^2 samples (240 s), so each stream is played
    // twice over, and the figures are those of the hops with whole windows.
    let mut eye = opts.clone();
    eye.deblink.params.remove_eye_movements = true;
    run("eeglab-eye-mode-full-speed", &repeated(&data), &eye)?;
    eye.duration_s = Some(args.eye);
    run("64ch-512hz-eye-mode-full-speed", &repeated(&many), &eye)?;
    let mut frames = Vec::new();
    if wanted("frames") {
        // As the interface runs.
        crate::app::without_huge_pages();
        let many = as_recording(&many, &rec);
        for stream in [("eeglab", &rec), ("64ch-512hz", &many)] {
            for speed in [None, Some(1.0)] {
                frames.push(live_frames(stream, args.frames, speed)?);
            }
        }
    }
    write_json(
        &Report {
            cpu: cpu_name(),
            runs,
            frames,
        },
        args.out.as_deref(),
    )
}
