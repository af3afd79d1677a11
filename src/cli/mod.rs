//! Command-line interface: argument definitions and one file per subcommand.

pub mod bench;
pub mod blinks;
pub mod cwt;
pub mod deblink;
pub mod epochs;
pub mod export;
pub mod group;
pub mod hermite;
pub mod hrv;
pub mod ica;
pub mod info;
pub mod live;
pub mod psd;
pub mod sleep;
pub mod stream;
pub mod trend;
pub mod xapen;

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use crate::app::{Clip, Span, StartOptions};
use crate::recording::{ChannelType, OpenOptions, ReadError, Recording, bids};

#[derive(Debug, Parser)]
#[command(
    name = "ede",
    version = crate::VERSION_WITH_COMMIT,
    about = "Viewer and GPU analyzer for EEG, MEG and ECG recordings",
    after_help = "The viewer needs a display (X11 or Wayland; `xvfb-run -a ede FILE --screenshot \
        PNG` without one) and a Vulkan driver: the GPU's own, or Mesa's software lavapipe \
        (Debian/Ubuntu: apt-get install libvulkan1 mesa-vulkan-drivers libxkbcommon-x11-0). \
        Where one is missing, ede names it. The subcommands need neither: their analyses run \
        on the CPU where there is no GPU.",
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub gui: GuiArgs,
    /// Channel types where the file or the labels say otherwise, LABEL=TYPE,... (eeg, eog,
    /// ecg, emg, stim, resp, misc, mag, grad, ref_meg): only EEG channels with 10-20/10-10
    /// names or positions are scalp electrodes, in every average and montage.
    #[arg(long, global = true, value_delimiter = ',', value_name = "LABEL=TYPE", value_parser = parse_type)]
    pub types: Vec<(String, ChannelType)>,
}

fn parse_type(s: &str) -> Result<(String, ChannelType), String> {
    let (label, kind) =
        (s.rsplit_once('=')).ok_or_else(|| format!("expected LABEL=TYPE, got {s:?}"))?;
    let kind = ChannelType::parse(kind).ok_or_else(|| {
        format!("{kind:?} is not a channel type (eeg, eog, ecg, emg, stim, resp, misc, mag, grad, ref_meg)")
    })?;
    Ok((label.trim().to_string(), kind))
}

/// The channel types the command line sets (`--types`), for every recording a command opens.
static TYPES: std::sync::OnceLock<Vec<(String, ChannelType)>> = std::sync::OnceLock::new();

/// `--types` applied to a recording just opened.
pub fn with_types(mut rec: Recording) -> Result<Recording, ReadError> {
    if let Some(types) = TYPES.get().filter(|t| !t.is_empty()) {
        let path = rec.path.clone().unwrap_or_default();
        rec.set_types(types)
            .map_err(|e| ReadError::invalid(&path, e))?;
    }
    Ok(rec)
}

/// Arguments of the GUI (no subcommand).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GuiArgs {
    /// Recording to open (EDF, EDF+, BDF, BDF+, WFDB record, CSV); the demo when omitted.
    pub file: Option<PathBuf>,
    /// Sampling rate of a CSV file without a time column.
    #[arg(long)]
    pub fs: Option<f64>,
    /// Render the window after the first complete frame, save it as PNG and exit.
    #[arg(long, value_name = "PNG")]
    pub screenshot: Option<PathBuf>,
    /// Which view to show: browser, xapen, scalogram, beats, blinks, ica, erp or live.
    #[arg(long, default_value = "browser")]
    pub view: String,
    /// Window size for the screenshot, WIDTHxHEIGHT.
    #[arg(long, default_value = "1600x1000")]
    pub size: String,
    /// Open at this time, in seconds from the start of the recording.
    #[arg(long, value_name = "SECONDS", value_parser = parse_start)]
    pub start: Option<f64>,
    /// Seconds per page to open with, or "all" for the whole recording.
    #[arg(long, value_name = "SECONDS|all", value_parser = parse_span)]
    pub span: Option<Span>,
    /// Open the Live tab on this LSL stream (its name, or PROPERTY=VALUE such as type=EEG).
    #[arg(long, value_name = "NAME")]
    pub lsl: Option<String>,
    /// Open in this montage: a built-in one by name or a montage file (.json, .mtg).
    #[arg(long, value_name = "NAME|FILE")]
    pub montage: Option<String>,
    /// Re-reference the EEG channels: average, mastoids or channel labels.
    #[arg(long)]
    pub reference: Option<crate::dsp::montage::Reference>,
    /// Sensitivity of EEG (and other channels in volts) in uV/mm on the calibrated screen.
    #[arg(long, value_name = "UV_PER_MM", value_parser = positive("--sensitivity", "uV/mm"))]
    pub sensitivity: Option<f32>,
    /// Paper speed in mm/s on the calibrated screen.
    #[arg(long, value_name = "MM_PER_S", value_parser = positive("--paper-speed", "mm/s"))]
    pub paper_speed: Option<f32>,
    /// Where traces are cut: off (the default: they overlap their neighbours, as in
    /// EDFbrowser) or a number of lanes centred on their own (MNE's browser cuts at 1.5).
    #[arg(long, value_name = "off|LANES", value_parser = parse_clip)]
    pub clip: Option<Clip>,
    /// Filters of every channel, e.g. hp=0.5,lp=35,order=4,notch=50.
    #[arg(long, value_parser = export::parse_filter)]
    pub filter: Option<crate::dsp::filter::DisplayFilter>,
    /// Open with the night's trend strips and the power-spectrum dock (Night menu).
    #[arg(long)]
    pub night: bool,
    /// Open in sleep scoring mode (30 s pages; W, 1, 2, 3, R score and advance).
    #[arg(long)]
    pub score: bool,
}

impl GuiArgs {
    /// The GUI's start-up options (an app type: the app does not know the command line).
    pub fn start_options(&self) -> Result<StartOptions, String> {
        let size = self
            .size
            .split_once('x')
            .and_then(|(w, h)| Some((w.parse::<f32>().ok()?, h.parse::<f32>().ok()?)))
            .filter(|&(w, h)| w >= 100.0 && h >= 100.0 && w.is_finite() && h.is_finite())
            .ok_or_else(|| {
                format!(
                    "--size must be WIDTHxHEIGHT (at least 100x100), got {:?}",
                    self.size
                )
            })?;
        Ok(StartOptions {
            file: self.file.clone(),
            fs: self.fs,
            screenshot: self.screenshot.clone(),
            view: self.view.clone(),
            size,
            start: self.start,
            span: self.span,
            lsl: self.lsl.clone(),
            montage: self.montage.clone(),
            reference: self.reference.clone(),
            filter: self.filter,
            sensitivity: self.sensitivity,
            paper_speed: self.paper_speed,
            clip: self.clip,
            types: Vec::new(),
            night: self.night,
            score: self.score,
        })
    }
}

fn parse_start(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("expected seconds >= 0, got {s:?}")),
    }
}

/// A measured figure as people write it: at most 6 significant digits, no trailing zeros
/// (1017.78 Hz, not 1017.7777709960938 Hz; 256 Hz, not 256.000).
pub fn round_for_people(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{x}");
    }
    let digits = (5 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let t = format!("{x:.digits$}");
    match t.contains('.') {
        true => t.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => t,
    }
}

fn parse_clip(s: &str) -> Result<Clip, String> {
    if s.eq_ignore_ascii_case("off") || s.eq_ignore_ascii_case("never") {
        return Ok(Clip::Off);
    }
    match s.parse::<f32>() {
        Ok(v) if v.is_finite() && v >= 1.0 => Ok(Clip::Lanes(v)),
        _ => Err(format!("expected off or a number of lanes >= 1, got {s:?}")),
    }
}

/// A parser of a number above 0 (and finite) for `flag`, in `unit`.
fn positive(
    flag: &'static str,
    unit: &'static str,
) -> impl Fn(&str) -> Result<f32, String> + Clone {
    move |s: &str| match s.parse::<f32>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "{flag} must be a number of {unit} above 0, got {s:?}"
        )),
    }
}

fn parse_span(s: &str) -> Result<Span, String> {
    if s == "all" {
        return Ok(Span::All);
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(Span::Seconds(v)),
        _ => Err(format!("expected seconds > 0 or \"all\", got {s:?}")),
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print what a recording holds: format, start, duration, signals, annotations, warnings.
    Info(info::InfoArgs),
    /// Write physical values of some channels and a time range as CSV.
    Export(export::ExportArgs),
    /// Power spectral density of channels over a time range (Welch's method, as SciPy's).
    Psd(psd::PsdArgs),
    /// Epochs around events and their averages (ERPs), as MNE's Epochs: JSON and MNE's
    /// evoked file.
    Epochs(epochs::EpochsArgs),
    /// Sleep statistics (YASA's) of the hypnogram a recording's stage events make.
    Sleep(sleep::SleepArgs),
    /// Heart rate variability (time domain, LF/HF) of an ECG channel's beats.
    Hrv(hrv::HrvArgs),
    /// Whole-recording trends: the compressed spectral array (CDSA) or aEEG.
    Trend(trend::TrendArgs),
    /// Cross-ApEn matrices of every channel pair, for one or many recordings.
    Xapen(xapen::XapenArgs),
    /// Morlet wavelet scalograms of a channel, or band power in blocks of whole recordings.
    Cwt(cwt::CwtArgs),
    /// Hermite-function fits of every QRS complex of an ECG channel.
    Hermite(hermite::HermiteArgs),
    /// Remove eye blinks with ICA; the cleaned recording keeps the input's format.
    Deblink(deblink::DeblinkArgs),
    /// ICA of the whole recording as MNE fits it: MNE's ICA file, labels, the cleaned recording.
    Ica(ica::IcaArgs),
    /// Clean a live LSL stream, or a recording played as one, of blinks hop by hop (no
    /// window); record the session.
    Live(live::LiveArgs),
    /// Publish a recording as a Lab Streaming Layer stream.
    Stream(stream::StreamArgs),
    /// Gather a study's per-recording outputs into group tables and figures.
    Group(group::GroupArgs),
    /// Simulated blinks with known times, and scores of blink removal against them.
    #[command(subcommand)]
    Blinks(blinks::BlinksCommand),
    /// Run a benchmark and write its figures as JSON.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
}

/// Where a batch analysis runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// The GPU unless it is a software adapter (lavapipe), where the CPU path is faster.
    Auto,
    Gpu,
    Cpu,
}

/// The GPU a batch command runs on, or `None` for the CPU (the reason said once on stderr).
pub fn open_gpu(command: &str, choice: BackendChoice) -> Option<crate::gpu::GpuContext> {
    if choice == BackendChoice::Cpu {
        return None;
    }
    match crate::gpu::GpuContext::headless() {
        Ok(c) if choice == BackendChoice::Auto && c.is_software() => {
            eprintln!(
                "{command}: {} is a software adapter; running on the CPU \
                 (--backend gpu to use it anyway)",
                c.describe()
            );
            None
        }
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("{command}: {e}");
            None
        }
    }
}

/// The GPU of a batch command, opened the first time a job asks for it (`get`): blink
/// removal knows only from a recording's channel count whether its ICA runs there
/// (`analysis::blink::runs_on_gpu`), and opening Vulkan costs a process 0.25-0.35 s.
pub struct LazyGpu {
    command: &'static str,
    choice: BackendChoice,
    gpu: std::cell::OnceCell<Option<crate::gpu::GpuContext>>,
}

impl LazyGpu {
    pub fn new(command: &'static str, choice: BackendChoice) -> Self {
        LazyGpu {
            command,
            choice,
            gpu: std::cell::OnceCell::new(),
        }
    }

    /// The GPU for a job that would run on it (`wanted`, or always with `--backend gpu`).
    pub fn get(&self, wanted: bool) -> Option<&crate::gpu::GpuContext> {
        if !(wanted || self.choice == BackendChoice::Gpu) {
            return None;
        }
        let gpu = self.gpu.get_or_init(|| open_gpu(self.command, self.choice));
        gpu.as_ref()
    }

    /// The smallest channel count whose ICA runs on the GPU: every one with `--backend gpu`.
    pub fn min_channels(&self) -> usize {
        match self.choice {
            BackendChoice::Gpu => 0,
            _ => crate::analysis::blink::MIN_GPU_CHANNELS,
        }
    }
}

/// Opens a recording for a subcommand, with the CSV rate if given; a run of a BIDS dataset
/// (by its name and folder) with its sidecars.
pub fn open(path: &std::path::Path, fs: Option<f64>) -> Result<Recording, ReadError> {
    with_types(bids::open_file(
        path,
        &OpenOptions {
            csv_fs: fs,
            ..Default::default()
        },
    )?)
}

/// Opens a recording as `open` does, with the channels `bad` names marked bad and, where
/// `interpolate`, the bad scalp electrodes interpolated.
pub fn open_marked(
    path: &Path,
    fs: Option<f64>,
    bad: &[String],
    interpolate: bool,
) -> anyhow::Result<Recording> {
    use anyhow::Context;
    let mut rec = open(path, fs)?;
    for label in bad {
        let c = crate::dsp::montage::find_channel(&rec, label)
            .with_context(|| format!("--bad: the recording has no channel {label:?}"))?;
        rec.signals[c].bad = true;
    }
    if interpolate {
        interpolate_bads(&mut rec);
    }
    Ok(rec)
}

/// Turns on the interpolation of bad scalp electrodes, saying on standard error which are
/// interpolated and which stay as recorded (and why).
fn interpolate_bads(rec: &mut Recording) {
    rec.interpolate_bads = true;
    let plan = crate::dsp::spline::BadInterpolation::of(rec);
    let names = |v: Vec<usize>| -> String {
        v.iter()
            .map(|&c| rec.signals[c].label.trim())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if plan.bads.is_empty() && plan.left.is_empty() {
        eprintln!("note: --interpolate-bads: no scalp electrode is marked bad");
    } else if !plan.bads.is_empty() {
        eprintln!(
            "note: interpolated {} from {} good electrodes",
            names(plan.bads.iter().map(|b| b.0).collect()),
            plan.goods.len()
        );
    }
    for (c, why) in &plan.left {
        eprintln!(
            "warning: {} stays as recorded: {why}",
            rec.signals[*c].label.trim()
        );
    }
}

/// Writes `text` and a newline to standard output. A reader that went away (`ede info F | head`)
/// is not an error.
pub fn print(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// One recording of a study: a file named on the command line, or a run of a BIDS dataset
/// named by its root (whose results go to the dataset's `derivatives/ede/`).
pub struct Item {
    pub path: PathBuf,
    pub bids: Option<(std::sync::Arc<bids::Dataset>, bids::Run)>,
}

impl Item {
    /// The recording (with a BIDS run's sidecars applied).
    pub fn open(&self, fs: Option<f64>) -> Result<Recording, ReadError> {
        match &self.bids {
            Some((_, run)) => run.open(),
            None => open(&self.path, fs),
        }
    }

    /// Where a BIDS run's result goes (`desc`, `suffix` as in `Dataset::derivative`); `None`
    /// for a plain file.
    pub fn derivative(&self, desc: &str, suffix: &str) -> anyhow::Result<Option<PathBuf>> {
        use anyhow::Context;
        let Some((dataset, run)) = &self.bids else {
            return Ok(None);
        };
        let p = (dataset.derivative(run, desc, suffix))
            .with_context(|| format!("cannot write into {}", dataset.root.display()))?;
        Ok(Some(p))
    }
}

/// The recordings of a study: each path a recording, or a BIDS dataset's root whose runs
/// `filter` keeps.
pub fn expand(paths: &[PathBuf], filter: &bids::Filter) -> anyhow::Result<Vec<Item>> {
    let mut items = Vec::new();
    for p in paths {
        if !bids::is_dataset(p) {
            items.push(Item {
                path: p.clone(),
                bids: None,
            });
            continue;
        }
        let dataset = std::sync::Arc::new(bids::Dataset::scan(p)?);
        let runs: Vec<bids::Run> = dataset.select(filter).into_iter().cloned().collect();
        if runs.is_empty() {
            anyhow::bail!(
                "{}: no run of the dataset matches the --subject/--session/--task/--run filters",
                p.display()
            );
        }
        items.extend(runs.into_iter().map(|run| Item {
            path: run.path.clone(),
            bids: Some((dataset.clone(), run)),
        }));
    }
    Ok(items)
}

/// Runs `one(item, tag)` on every recording of a study (BIDS roots expanded by `filter`). A
/// recording that fails is said on stderr with its reason and the study goes on; the reports
/// `one` returns are written to `out` (one object for one recording, an array for several;
/// stdout without `out`), and the exit is an error when any recording failed.
pub fn study<R: serde::Serialize>(
    files: &[PathBuf],
    filter: &bids::Filter,
    out: Option<&Path>,
    mut one: impl FnMut(&Item, &str) -> anyhow::Result<Option<R>>,
) -> anyhow::Result<()> {
    let items = expand(files, filter)?;
    let total = items.len();
    let mut reports = Vec::new();
    let mut failed = 0;
    for (k, item) in items.iter().enumerate() {
        let tag = format!("[{}/{total}] {}", k + 1, item.path.display());
        match one(item, &tag) {
            Ok(report) => reports.extend(report),
            Err(e) => {
                eprintln!("{tag}: {e:#}");
                failed += 1;
            }
        }
    }
    match (total, reports.as_slice()) {
        (_, []) => {}
        (1, [report]) => write_json(report, out)?,
        _ => write_json(&reports, out)?,
    }
    if failed > 0 {
        anyhow::bail!("{failed} of {total} recording(s) failed");
    }
    Ok(())
}

/// The file a study writes for `path` into an output folder: its stem and `suffix`.
pub fn out_name(path: &Path, suffix: &str) -> String {
    let stem = path
        .file_stem()
        .map_or("recording".into(), |s| s.to_string_lossy());
    format!("{stem}.{suffix}")
}

/// What made an output: ede's version and the command line, with its parameters. Every report
/// a batch command writes carries it as `"provenance"`, so that a table built months later
/// from a study's outputs says what produced each row.
pub fn provenance() -> serde_json::Value {
    let command = match ARGS.get() {
        Some(args) => args.clone(),
        None => std::env::args().collect(),
    };
    serde_json::json!({
        "ede_version": crate::VERSION,
        "ede_commit": crate::COMMIT,
        "command": command,
    })
}

/// The command line `main_with` was given: inside Python the process's own arguments are the
/// interpreter's.
static ARGS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();

/// Runs `ede` with the command line `args` (the program's name first): the viewer, or a
/// subcommand; the exit status. The binary's `main` and the Python package's console script.
pub fn main_with(args: Vec<String>) -> u8 {
    quiet_device_select();
    let _ = ARGS.set(args.clone());
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            // --help and --version print and succeed; mistakes print and fail.
            let _ = e.print();
            return e.exit_code() as u8;
        }
    };
    let _ = TYPES.set(cli.types.clone());
    let result = match &cli.command {
        Some(Command::Info(args)) => info::run(args),
        Some(Command::Export(args)) => export::run(args),
        Some(Command::Psd(args)) => psd::run(args),
        Some(Command::Epochs(args)) => epochs::run(args),
        Some(Command::Sleep(args)) => sleep::run(args),
        Some(Command::Hrv(args)) => hrv::run(args),
        Some(Command::Trend(args)) => trend::run(args),
        Some(Command::Xapen(args)) => xapen::run(args),
        Some(Command::Cwt(args)) => cwt::run(args),
        Some(Command::Hermite(args)) => hermite::run(args),
        Some(Command::Deblink(args)) => deblink::run(args),
        Some(Command::Ica(args)) => ica::run(args),
        Some(Command::Live(args)) => live::run(args),
        Some(Command::Stream(args)) => stream::run(args),
        Some(Command::Blinks(cmd)) => blinks::run(cmd),
        Some(Command::Group(args)) => group::run(args),
        Some(Command::Bench(cmd)) => bench::run(cmd),
        None => (cli.gui.start_options())
            .map(|o| StartOptions {
                types: cli.types.clone(),
                ..o
            })
            .map_err(anyhow::Error::msg)
            .and_then(crate::app::run),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ede: {e:#}");
            1
        }
    }
}

/// Mesa's device-select Vulkan layer connects to Wayland to rank the GPUs; on a machine without
/// a session (no `XDG_RUNTIME_DIR`: a cluster node, CI, ssh) libwayland prints "error:
/// XDG_RUNTIME_DIR is invalid or not set" twice for every command that opens a GPU. The
/// ranking is nothing ede uses (wgpu picks the adapter), so the layer is turned off there.
fn quiet_device_select() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none()
        && std::env::var_os("NODEVICE_SELECT").is_none()
    {
        // SAFETY: called first thing in the process (or the Python console script), before
        // any thread of ede's is started; nothing else reads the environment concurrently.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}

/// Pretty JSON to `out`, or to standard output, with `provenance()` added to the report (to
/// each, for an array). A file is written beside its target and renamed: it appears whole or
/// not at all, even when the job is killed.
pub fn write_json(value: &impl serde::Serialize, out: Option<&Path>) -> anyhow::Result<()> {
    let mut value = serde_json::to_value(value)?;
    let stamp = |v: &mut serde_json::Value| {
        if let Some(o) = v.as_object_mut() {
            o.insert("provenance".into(), provenance());
        }
    };
    match &mut value {
        serde_json::Value::Array(items) => items.iter_mut().for_each(stamp),
        v => stamp(v),
    }
    let json = serde_json::to_string_pretty(&value)?;
    match out {
        Some(p) => write_whole(p, (json + "\n").as_bytes())?,
        None => print(&json)?,
    }
    Ok(())
}

/// `recording::write_whole`, its error naming the file.
pub fn write_whole(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context;
    crate::recording::write_whole(path, bytes)
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn start_and_span_are_checked() {
        let cli = Cli::try_parse_from(["ede", "f.edf", "--start", "60", "--span", "all"]).unwrap();
        assert_eq!((cli.gui.start, cli.gui.span), (Some(60.0), Some(Span::All)));
        assert_eq!(round_for_people(1017.7777709960938), "1017.78");
        assert_eq!(round_for_people(256.0), "256");
        assert_eq!(round_for_people(0.0123456789), "0.0123457");
        assert_eq!(round_for_people(-2.5), "-2.5");
        let cli = Cli::try_parse_from(["ede", "--span", "2.5"]).unwrap();
        assert_eq!(cli.gui.span, Some(Span::Seconds(2.5)));
        for bad in [
            ["--span", "0"],
            ["--span", "nan"],
            ["--start", "-1"],
            ["--start", "inf"],
        ] {
            assert!(
                Cli::try_parse_from(["ede", bad[0], bad[1]]).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_version_names_its_commit_and_help_the_viewer_s_needs() {
        let version = Cli::try_parse_from(["ede", "--version"]).unwrap_err();
        assert_eq!(version.kind(), clap::error::ErrorKind::DisplayVersion);
        let text = version.to_string();
        let rest = text
            .trim()
            .strip_prefix(&format!("ede {} (", crate::VERSION));
        let commit = rest.and_then(|r| r.strip_suffix(')')).expect(&text);
        // A checkout's hash and date; "unknown" only outside one.
        if commit != "unknown" {
            let (hash, date) = commit.split_once(' ').expect(commit);
            assert!(
                hash.len() >= 7 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
                "{commit}"
            );
            assert!(
                chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").is_ok(),
                "{commit}"
            );
        }
        let help = Cli::try_parse_from(["ede", "--help"])
            .unwrap_err()
            .to_string();
        assert!(
            help.contains("Vulkan") && help.contains("mesa-vulkan-drivers"),
            "{help}"
        );
    }
}
