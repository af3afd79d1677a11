//! `ede bench io`: opening, decoding and drawing a large generated recording, written as JSON.
//!
//! The file (64 channels, 256 Hz, 16 h, about 1.9 GB by default; EDF, BrainVision, FIF or 4D,
//! all 16-bit, or EEGLAB's float32 .fdt) is generated once and reused.
//! A frame is measured as the CPU work of one egui pass of the whole window (layout, columns,
//! mesh) plus tessellation, with the window moved each frame so nothing is served from cache.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use eframe::egui;
use serde::Serialize;

use super::Stats;
use crate::app::{EdeApp, Settings};
use crate::cli::write_json;
use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::{DerivationSpec, Minus, Montage, Reference};
use crate::recording::{OpenOptions, Recording};

/// The formats the benchmark generates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchFormat {
    Edf,
    Brainvision,
    Fif,
    /// 4D/BTi: a data file with its config, in a folder of its own.
    Bti,
    Eeglab,
}

#[derive(Debug, clap::Args)]
pub struct IoArgs {
    /// Where the generated EDF is kept (created if missing or of another size); for other
    /// formats the extension changes (.vhdr, _raw.fif, .set, a folder _4d).
    #[arg(long, default_value = "target/bench/io_64ch_256hz.edf")]
    pub file: PathBuf,
    #[arg(long, value_enum, default_value_t = BenchFormat::Edf)]
    pub format: BenchFormat,
    #[arg(long, default_value_t = 64)]
    pub channels: usize,
    #[arg(long, default_value_t = 16.0)]
    pub hours: f64,
    /// Frames measured per zoom.
    #[arg(long, default_value_t = 30)]
    pub frames: usize,
    /// JSON output (standard output when omitted).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Real recordings (files, or folders such as CTF's .ds and EGI's .mff) to time from
    /// nothing to their first page drawn, instead of the generated file.
    #[arg(long, num_args = 1..)]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Serialize)]
struct IoReport {
    format: String,
    file: String,
    file_bytes: u64,
    channels: usize,
    fs: f64,
    duration_h: f64,
    threads: usize,
    open_s: Stats,
    decode_10s_screen_s: Stats,
    overview_build_s: f64,
    /// Anonymous resident memory (the mapped file's pages are page cache, not counted).
    rss_anon_after_open_mb: Option<f64>,
    rss_anon_after_overview_mb: Option<f64>,
    frames: Vec<FrameReport>,
}

#[derive(Debug, Serialize)]
struct FrameReport {
    /// What the page shows.
    page: String,
    span_s: f64,
    window_px: [f32; 2],
    /// The whole window: layout, columns, mesh and tessellation.
    cpu_frame_s: Stats,
    /// Only the per-pixel `[min, max]` columns of every trace.
    columns_s: Stats,
}

const FS: usize = 256;

pub fn run(args: &IoArgs) -> anyhow::Result<()> {
    if !args.files.is_empty() {
        let pages = super::first_page::run(&args.files, args.frames)?;
        return write_json(&pages, args.out.as_deref());
    }
    let records = (args.hours * 3600.0).round() as usize;
    let (file, data_file) = match args.format {
        BenchFormat::Edf => {
            generate_edf(&args.file, args.channels, records, FS)?;
            (args.file.clone(), args.file.clone())
        }
        BenchFormat::Brainvision => {
            let vhdr = args.file.with_extension("vhdr");
            super::io_formats::brainvision(&vhdr, args.channels, records, FS)?;
            (vhdr.clone(), vhdr.with_extension("eeg"))
        }
        BenchFormat::Fif => {
            let stem = args.file.file_stem().unwrap_or_default().to_string_lossy();
            let fif = args.file.with_file_name(format!("{stem}_raw.fif"));
            super::io_formats::fif(&fif, args.channels, records, FS)?;
            (fif.clone(), fif)
        }
        BenchFormat::Bti => {
            let stem = args.file.file_stem().unwrap_or_default().to_string_lossy();
            let data = args
                .file
                .with_file_name(format!("{stem}_4d"))
                .join("c,rfDC");
            super::io_formats::bti(&data, args.channels, records, FS)?;
            (data.clone(), data)
        }
        BenchFormat::Eeglab => {
            let set = args.file.with_extension("set");
            super::io_formats::eeglab(&set, args.channels, records, FS)?;
            (set.clone(), set.with_extension("fdt"))
        }
    };
    let args = &IoArgs {
        file,
        format: args.format,
        channels: args.channels,
        hours: args.hours,
        frames: args.frames,
        out: args.out.clone(),
        files: Vec::new(),
    };
    let file_bytes = std::fs::metadata(&data_file)?.len();

    let mut open_times = Vec::new();
    for _ in 0..7 {
        let t = Instant::now();
        let rec = Recording::open(&args.file, &OpenOptions::default())?;
        open_times.push(t.elapsed().as_secs_f64());
        drop(rec);
    }
    let rec = Recording::open(&args.file, &OpenOptions::default())?;
    let rss_anon_after_open_mb = rss_mb();
    let mut decode = Vec::new();
    let mut buf = vec![0f32; 10 * FS];
    for k in 0..20 {
        let start = (k * 997 * FS) % (rec.signals[0].samples - buf.len());
        let t = Instant::now();
        for c in 0..rec.signals.len() {
            rec.read(c, start, &mut buf)?;
        }
        decode.push(t.elapsed().as_secs_f64());
    }

    let mut app = EdeApp::new(Some(args.file.clone()), None, Settings::default(), None);
    let t = Instant::now();
    let ctx = egui::Context::default();
    let size = egui::vec2(1600.0, 1000.0);
    // The first pass starts the overview; wait for it as a user would see the bar fill.
    let _ = run_frame(&ctx, &mut app, size);
    while !app.browser.traces.overview_ready() {
        std::thread::sleep(std::time::Duration::from_millis(5));
        let _ = run_frame(&ctx, &mut app, size);
    }
    let overview_build_s = t.elapsed().as_secs_f64();
    let rss_anon_after_overview_mb = rss_mb();

    let mut frames = Vec::new();
    for span in [10.0, 86_400.0] {
        frames.push(measure_frames(
            &ctx,
            &mut app,
            size,
            span,
            args.frames,
            "as recorded",
        ));
    }
    // The page a clinician reads: 20 derivations of a lab's montage (bipolar pairs, Hjorth
    // Laplacians, channels against the average) under an average reference, band-passed by
    // order-4 Butterworths; the goal is a frame within 1.5x of the plain page's.
    app.browser.add_user_montage(lab_montage(&rec));
    app.browser.set_reference(Reference::Average);
    app.browser
        .set_filter(DisplayFilter::parse("hp=0.5,lp=35,order=4").expect("a valid filter"));
    while !app.browser.traces.overview_ready() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    frames.push(measure_frames(
        &ctx,
        &mut app,
        size,
        10.0,
        args.frames,
        "20 derivations, average reference, HP 0.5 + LP 35 Hz order 4",
    ));

    // The scalp map at the cursor and the GFP lane on, over the clinician's page: the bench
    // file's channels placed at a 64-electrode cap's positions, the pointer moving every frame.
    {
        let mut placed = (*app.browser.rec).clone();
        for (c, s) in placed.signals.iter_mut().enumerate() {
            let name = super::erp::CAP[c % super::erp::CAP.len()];
            s.position = crate::recording::electrodes::template_1005_position(name);
        }
        app.browser.rec = std::sync::Arc::new(placed);
        app.browser.set_reference(Reference::AsRecorded);
        app.browser.set_reference(Reference::Average);
        app.browser.scalp.map = true;
        app.browser.scalp.gfp = true;
        frames.push(measure_frames_with(
            &ctx,
            &mut app,
            size,
            (10.0, args.frames),
            "scalp map at the moving cursor and GFP lane, 64 electrodes, average reference",
            true,
        ));
    }

    let report = IoReport {
        format: rec.format.to_string(),
        file: args.file.display().to_string(),
        file_bytes,
        channels: rec.signals.len(),
        fs: rec.signals[0].fs,
        duration_h: rec.duration_s() / 3600.0,
        threads: rayon::current_num_threads(),
        open_s: Stats::of(open_times),
        decode_10s_screen_s: Stats::of(decode),
        overview_build_s,
        rss_anon_after_open_mb,
        rss_anon_after_overview_mb,
        frames,
    };
    write_json(&report, args.out.as_deref())
}

/// One egui pass of the whole window plus tessellation; returns its seconds.
/// `frames` frames of the browser at `span` seconds, the window moved a few pixels each.
fn measure_frames(
    ctx: &egui::Context,
    app: &mut EdeApp,
    size: egui::Vec2,
    span: f64,
    frames: usize,
    page: &str,
) -> FrameReport {
    measure_frames_with(ctx, app, size, (span, frames), page, false)
}

/// `measure_frames`, the window moved, or (`pointer`) the window still and the pointer moved
/// across the traces a few pixels each frame (the scalp map follows it).
fn measure_frames_with(
    ctx: &egui::Context,
    app: &mut EdeApp,
    size: egui::Vec2,
    (span, frames): (f64, usize),
    page: &str,
    pointer: bool,
) -> FrameReport {
    app.browser.settings.span_s = span;
    app.browser.t0 = 0.0;
    let _ = run_frame(ctx, app, size);
    let _ = run_frame(ctx, app, size);
    let mut times = Vec::new();
    for k in 0..frames {
        if pointer {
            let plot = app.browser.plot_rect;
            let x = plot.left() + plot.width() * (0.2 + 0.6 * k as f32 / frames.max(1) as f32);
            let at = egui::pos2(x, plot.center().y);
            times.push(run_frame_with(
                ctx,
                app,
                size,
                vec![egui::Event::PointerMoved(at)],
            ));
        } else {
            // Scroll by a few pixels each frame, as a drag does.
            app.browser.t0 = (k as f64) * span / 400.0;
            times.push(run_frame(ctx, app, size));
        }
    }
    let columns = (size.x - 350.0) as usize;
    let mut col_times = Vec::new();
    for k in 0..frames {
        let t = Instant::now();
        let s = app.browser.traces.screen(
            k as f64 * span / 400.0,
            app.browser.settings.span_s,
            columns,
        );
        col_times.push(t.elapsed().as_secs_f64());
        std::hint::black_box(s);
    }
    FrameReport {
        page: page.to_string(),
        span_s: app.browser.settings.span_s,
        window_px: [size.x, size.y],
        cpu_frame_s: Stats::of(times),
        columns_s: Stats::of(col_times),
    }
}

/// 20 derivations over the bench recording's EEG00..EEG63: 8 neighbouring pairs, 4 Hjorth
/// Laplacians and 8 channels against the average.
fn lab_montage(rec: &Recording) -> Montage {
    let n = rec.signals.len();
    let label = |c: usize| rec.signals[c % n].label.clone();
    let mut derivations = Vec::new();
    for k in 0..8 {
        let c = 2 * k;
        derivations.push(DerivationSpec::new(
            format!("{}-{}", label(c), label(c + 1)),
            label(c),
            Minus::Channel(label(c + 1)),
        ));
    }
    for k in 0..4 {
        let c = 20 + 5 * k;
        derivations.push(DerivationSpec::new(
            format!("{} Lap", label(c)),
            label(c),
            Minus::Mean((1..=4).map(|j| label(c + j)).collect()),
        ));
    }
    for k in 0..8 {
        let c = 40 + k;
        derivations.push(DerivationSpec::new(
            format!("{}-avg", label(c)),
            label(c),
            Minus::None,
        ));
    }
    Montage {
        name: "bench lab montage".into(),
        derivations,
    }
}

/// One frame's CPU work: the egui pass of the whole window and its tessellation, seconds.
pub(super) fn run_frame(ctx: &egui::Context, app: &mut EdeApp, size: egui::Vec2) -> f64 {
    run_frame_with(ctx, app, size, Vec::new())
}

/// `run_frame` with input `events`.
fn run_frame_with(
    ctx: &egui::Context,
    app: &mut EdeApp,
    size: egui::Vec2,
    events: Vec<egui::Event>,
) -> f64 {
    let input = egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(egui::Pos2::ZERO, size)),
        events,
        ..Default::default()
    };
    let t = Instant::now();
    let mut out = ctx.run_ui(input, |ui| app.ui(ui));
    // No renderer takes the new textures here (a debug build asserts they are taken).
    out.textures_delta.clear();
    let prims = ctx.tessellate(out.shapes, out.pixels_per_point);
    std::hint::black_box(prims);
    t.elapsed().as_secs_f64()
}

fn rss_mb() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: f64 = s
        .lines()
        .find(|l| l.starts_with("RssAnon:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// Writes a plain EDF of `channels` x `fs` Hz with one-second records: alpha-like sines over
/// hashed noise, so the pyramid sees realistic variation. Skipped when the file already has
/// the expected size.
pub(crate) fn generate_edf(
    path: &Path,
    channels: usize,
    records: usize,
    fs: usize,
) -> anyhow::Result<()> {
    let record_bytes = channels * fs * 2;
    let expected = 256 * (channels + 1) + records * record_bytes;
    if std::fs::metadata(path).is_ok_and(|m| m.len() as usize == expected) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    eprintln!(
        "generating {} ({:.2} GB)…",
        path.display(),
        expected as f64 / 1e9
    );
    let mut w = std::io::BufWriter::with_capacity(1 << 22, std::fs::File::create(path)?);
    let mut h = String::new();
    let field = |h: &mut String, s: &str, n: usize| h.push_str(&format!("{s:<n$.n$}"));
    field(&mut h, "0", 8);
    field(&mut h, "X X X X", 80);
    field(&mut h, "Startdate 01-JAN-2026 X ede bench", 80);
    field(&mut h, "01.01.26", 8);
    field(&mut h, "22.00.00", 8);
    field(&mut h, &(256 * (channels + 1)).to_string(), 8);
    field(&mut h, "", 44);
    field(&mut h, &records.to_string(), 8);
    field(&mut h, "1", 8);
    field(&mut h, &channels.to_string(), 4);
    let per = |h: &mut String, f: &dyn Fn(usize) -> String, n: usize| {
        for c in 0..channels {
            field(h, &f(c), n);
        }
    };
    per(&mut h, &|c| format!("EEG{c:02}"), 16);
    per(&mut h, &|_| "AgAgCl".into(), 80);
    per(&mut h, &|_| "uV".into(), 8);
    per(&mut h, &|_| "-3276.8".into(), 8);
    per(&mut h, &|_| "3276.7".into(), 8);
    per(&mut h, &|_| "-32768".into(), 8);
    per(&mut h, &|_| "32767".into(), 8);
    per(&mut h, &|_| "HP:0.1Hz LP:70Hz".into(), 80);
    per(&mut h, &|_| fs.to_string(), 8);
    per(&mut h, &|_| "".into(), 32);
    w.write_all(h.as_bytes())?;
    let mut rec = vec![0u8; record_bytes];
    let mut synth = Synth::new(fs);
    for _ in 0..records {
        for c in 0..channels {
            for i in 0..fs {
                let at = (c * fs + i) * 2;
                rec[at..at + 2].copy_from_slice(&synth.next(c, i).to_le_bytes());
            }
        }
        w.write_all(&rec)?;
    }
    w.flush()?;
    Ok(())
}

/// The benchmark's samples (digital, 0.1 uV steps): alpha-like sines over hashed noise, so
/// the pyramid sees realistic variation. Every format gets the same numbers.
pub(super) struct Synth {
    table: Vec<f64>,
    state: u64,
}

impl Synth {
    pub(super) fn new(fs: usize) -> Self {
        Synth {
            table: (0..fs)
                .map(|i| (2.0 * std::f64::consts::PI * 10.0 * i as f64 / fs as f64).sin())
                .collect(),
            state: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// Sample `i` of a one-second record of channel `c`.
    pub(super) fn next(&mut self, c: usize, i: usize) -> i16 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        let noise = ((self.state >> 40) as f64 / (1u64 << 24) as f64 - 0.5) * 200.0;
        (self.table[i] * (150.0 + 10.0 * c as f64) + noise) as i16
    }
}
