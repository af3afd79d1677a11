//! `ede bench ica`: the whole-recording ICA's speed goals (issue 61), in one run:
//!
//! - the EEGLAB sample as the ICA tab fits it (30 EEG channels, average reference, 1 Hz
//!   high-pass, every component): FastICA and Picard (both forms) on the CPU and the GPU,
//!   extended Infomax on the CPU, and a contrast change (logcosh to exp, warm-started, scored against the EOG channels:
//!   what the tab does before the grid redraws);
//! - 64 channels x 1 h x 256 Hz (the sample's channels, shifted copies of them, mixed): FastICA and
//!   Picard (both forms) on the GPU, Picard on the CPU, and FastICA on the CPU and extended
//!   Infomax where asked (they take minutes);
//! - ICLabel: features and network for the sample's components and the hour's 64, and the
//!   network alone for those 64.
//!
//! MNE's and mne-icalabel's figures on the same machine come from `tools/bench_ica_mne.py`.

use std::path::PathBuf;

use serde::Serialize;

use super::Stats;
use super::deblink::{mixed, time};
use crate::analysis::Backend;
use crate::analysis::ica::iclabel;
use crate::analysis::ica::report::Fitted;
use crate::analysis::ica::{Decomposition, IcaData, IcaMethod, IcaSettings, PicardForm, decompose};
use crate::analysis::xapen::cpu_name;
use crate::cli::write_json;
use crate::dsp::filter::DisplayFilter;
use crate::dsp::ica::{Contrast, Observations};
use crate::dsp::montage::Reference;
use crate::gpu::GpuContext;
use crate::gpu::picard::GpuPicard;
use crate::recording::{ChannelType, OpenOptions, Recording};

#[derive(Debug, clap::Args)]
pub struct IcaBenchArgs {
    #[arg(
        long,
        default_value = "../shared/data/eeg/eeglab_sample_32ch_128hz.edf"
    )]
    pub record: PathBuf,
    /// Repetitions of each timing (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Also fit the hour with FastICA on the CPU.
    #[arg(long)]
    pub cpu_hour: bool,
    /// Also fit the hour with extended Infomax (CPU).
    #[arg(long)]
    pub infomax_hour: bool,
    /// Skip the hour's Picard fits on the CPU (both forms; the GPU's run where there is one).
    #[arg(long)]
    pub no_picard_hour: bool,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Fit {
    what: String,
    backend: &'static str,
    channels: usize,
    samples: usize,
    components: usize,
    seconds: Stats,
    iterations: usize,
    converged: bool,
}

#[derive(Debug, Serialize)]
struct Labelling {
    what: String,
    components: usize,
    seconds: Stats,
}

#[derive(Debug, Serialize)]
struct Report {
    cpu: String,
    gpu: Option<String>,
    fits: Vec<Fit>,
    iclabel: Vec<Labelling>,
}

/// ICLabel of `d`'s components: features and network, and (`network_only`) the network alone.
fn labelling(
    what: &str,
    data: &IcaData,
    d: &Decomposition,
    repeat: usize,
    network_only: bool,
) -> anyhow::Result<Vec<Labelling>> {
    let (seconds, out) = time(repeat, || iclabel::label(data, d));
    let components = out.map_err(anyhow::Error::msg)?.len();
    eprintln!(
        "{what} iclabel: {components} components in {:.3} s",
        seconds.median
    );
    let mut all = vec![Labelling {
        what: format!("{what} iclabel (features and network)"),
        components,
        seconds,
    }];
    if network_only {
        let inputs = iclabel::inputs(data, d).map_err(anyhow::Error::msg)?;
        let (seconds, _) = time(repeat, || iclabel::Net::get().classify(&inputs));
        eprintln!("{what} iclabel network: {:.3} s", seconds.median);
        all.push(Labelling {
            what: format!("{what} iclabel network"),
            components,
            seconds,
        });
    }
    Ok(all)
}

/// 64 electrodes of the 10-10 system (the PhysioNet motor-imagery set): the hour's positions.
const HOUR_ELECTRODES: [&str; 64] = [
    "FC5", "FC3", "FC1", "FCz", "FC2", "FC4", "FC6", "C5", "C3", "C1", "Cz", "C2", "C4", "C6",
    "CP5", "CP3", "CP1", "CPz", "CP2", "CP4", "CP6", "Fp1", "Fpz", "Fp2", "AF7", "AF3", "AFz",
    "AF4", "AF8", "F7", "F5", "F3", "F1", "Fz", "F2", "F4", "F6", "F8", "FT7", "FT8", "T7", "T8",
    "T9", "T10", "TP7", "TP8", "P7", "P5", "P3", "P1", "Pz", "P2", "P4", "P6", "P8", "PO7", "PO3",
    "POz", "PO4", "PO8", "O1", "Oz", "O2", "Iz",
];

fn fit(
    what: &str,
    data: &IcaData,
    settings: &IcaSettings,
    (backend, gpu): (Backend, Option<&GpuContext>),
    repeat: usize,
) -> anyhow::Result<(Fit, Decomposition)> {
    let (seconds, d) = time(repeat, || decompose(data, settings, (backend, gpu), None));
    let d = d?;
    let f = Fit {
        what: what.into(),
        backend: if backend == Backend::Gpu {
            "gpu"
        } else {
            "cpu"
        },
        channels: data.data.rows,
        samples: data.data.cols,
        components: d.components(),
        seconds,
        iterations: d.iterations,
        converged: d.converged,
    };
    eprintln!(
        "{what} ({}): {}x{} -> {} components in {:.3} s, {} iterations",
        f.backend, f.channels, f.samples, f.components, f.seconds.median, f.iterations
    );
    Ok((f, d))
}

/// `channels` channels of `samples` samples with real EEG statistics and full rank: the
/// sample's channels, each also taken again from other points of the recording (cyclically,
/// prime offsets apart) until there are `channels` sources, repeated to `samples`, mixed by a
/// random matrix (`deblink::mixed`).
fn hour(sample: &IcaData, channels: usize, samples: usize) -> IcaData {
    let x = &sample.data;
    let mut sources = Vec::with_capacity(channels * samples);
    for c in 0..channels {
        let row = x.row(c % x.rows);
        let shift = (c / x.rows) * 7919 % x.cols;
        sources.extend(row.iter().cycle().skip(shift).take(samples));
    }
    let sources = Observations::new(channels, samples, sources);
    IcaData {
        signals: Vec::new(),
        labels: (0..channels)
            .map(|c| {
                HOUR_ELECTRODES
                    .get(c)
                    .map_or(format!("E{c}"), |l| l.to_string())
            })
            .collect(),
        kinds: vec![ChannelType::Eeg; channels],
        positions: vec![None; channels],
        units: vec![("uV", 1.0); channels],
        fs: 256.0,
        data: mixed(&sources, channels, samples),
        good: vec![(0, samples)],
        reference: Reference::AsRecorded,
        filter: DisplayFilter::default(),
    }
}

pub fn run(args: &IcaBenchArgs) -> anyhow::Result<()> {
    let rec = Recording::open(&args.record, &OpenOptions::default())?;
    let gpu = GpuContext::headless().ok().filter(|g| !g.is_software());
    let tab_filter = DisplayFilter {
        highpass: Some(1.0),
        highpass_order: 4,
        zero_phase: true,
        ..Default::default()
    };
    let sample = IcaData::load(&rec, &Reference::Average, &tab_filter)?;
    let fastica = IcaSettings::default();
    let infomax = IcaSettings {
        method: IcaMethod::Infomax,
        max_iter: 512,
        ..IcaSettings::default()
    };
    let picard = |form| {
        let (max_iter, tol) = IcaMethod::Picard.default_limits();
        IcaSettings {
            method: IcaMethod::Picard,
            picard: form,
            max_iter,
            tol,
            ..IcaSettings::default()
        }
    };
    let picards = [
        ("picard-o", picard(PicardForm::Fastica)),
        (
            "picard (extended infomax's problem)",
            picard(PicardForm::Infomax),
        ),
    ];
    // Picard's GPU rows only where it runs there (f64 in shaders), else they would be the
    // CPU's under the GPU's name.
    let picard_gpu = gpu.as_ref().filter(|g| GpuPicard::supported(g));
    let mut fits = Vec::new();
    let cpu = (Backend::Cpu, None);
    let (f, cpu_fit) = fit("sample fastica", &sample, &fastica, cpu, args.repeat)?;
    fits.push(f);
    let mut labels = labelling("sample", &sample, &cpu_fit, args.repeat, false)?;
    let mut backends = vec![(cpu, cpu_fit)];
    if let Some(g) = &gpu {
        let on = (Backend::Gpu, Some(g));
        let (f, gpu_fit) = fit("sample fastica", &sample, &fastica, on, args.repeat)?;
        fits.push(f);
        backends.push((on, gpu_fit));
    }
    fits.push(fit("sample infomax", &sample, &infomax, cpu, 1)?.0);
    for (name, settings) in &picards {
        let what = format!("sample {name}");
        fits.push(fit(&what, &sample, settings, cpu, args.repeat)?.0);
        if let Some(g) = picard_gpu {
            let on = (Backend::Gpu, Some(g));
            fits.push(fit(&what, &sample, settings, on, args.repeat)?.0);
        }
    }
    // A contrast change as the tab makes it: warm-started from the shown fit, then scored.
    let exp = IcaSettings {
        contrast: Contrast::Gauss,
        ..fastica
    };
    for (on, previous) in &backends {
        let (seconds, d) = time(args.repeat, || -> anyhow::Result<Decomposition> {
            let d = decompose(&sample, &exp, *on, Some(previous))?;
            Fitted::score(&rec, &sample, &d)?;
            Ok(d)
        });
        let d = d?;
        let f = Fit {
            what: "sample contrast change (logcosh to exp, warm, scored)".into(),
            backend: if on.0 == Backend::Gpu { "gpu" } else { "cpu" },
            channels: sample.data.rows,
            samples: sample.data.cols,
            components: d.components(),
            seconds,
            iterations: d.iterations,
            converged: d.converged,
        };
        eprintln!(
            "contrast change ({}): {:.3} s, {} iterations",
            f.backend, f.seconds.median, f.iterations
        );
        fits.push(f);
    }
    // The hour from the channels as recorded: average-referenced ones sum to zero, so each
    // group of shifted copies would lose a dimension and the hour would carry two components
    // of rounding noise (non-Gaussian only by accident, and flat to ICLabel).
    let as_recorded = IcaData::load(&rec, &Reference::AsRecorded, &tab_filter)?;
    let hour = hour(&as_recorded, 64, 3600 * 256);
    let mut hour_fit = None;
    if let Some(g) = &gpu {
        let on = (Backend::Gpu, Some(g));
        let (f, d) = fit("hour fastica", &hour, &fastica, on, args.repeat)?;
        fits.push(f);
        hour_fit = Some(d);
    }
    if args.cpu_hour || gpu.is_none() {
        let (f, d) = fit("hour fastica", &hour, &fastica, cpu, 1)?;
        fits.push(f);
        hour_fit = Some(d);
    }
    if let Some(d) = &hour_fit {
        labels.extend(labelling("hour", &hour, d, args.repeat, true)?);
    }
    for (name, settings) in &picards {
        let what = format!("hour {name}");
        if let Some(g) = picard_gpu {
            let on = (Backend::Gpu, Some(g));
            fits.push(fit(&what, &hour, settings, on, args.repeat)?.0);
        }
        if !args.no_picard_hour {
            fits.push(fit(&what, &hour, settings, cpu, 1)?.0);
        }
    }
    if args.infomax_hour {
        fits.push(fit("hour infomax", &hour, &infomax, cpu, 1)?.0);
    }
    let report = Report {
        cpu: cpu_name(),
        gpu: gpu.as_ref().map(|g| g.describe()),
        fits,
        iclabel: labels,
    };
    write_json(&report, args.out.as_deref())
}
