//! `ede bench all --out DIR`: every benchmark in one process, one JSON each in DIR, then
//! `summary.json` and `summary.md`: the roofline table of docs/BENCHMARKS.md (workload, ede,
//! goal, paper, peer, ceiling, ratio) filled from those JSONs. One device call measures
//! everything; sizes are chosen so that the whole run fits one (about 6 minutes on the H100
//! machine, most of it generating the two large files once). Where DIR also holds `torch.json`
//! (`docs/scripts/torch_peers.py --out DIR/torch.json`, the same workloads in PyTorch on the
//! same GPU), the table gains their times and ede's share of them.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Parser;
use serde::Serialize;
use serde_json::Value;

use super::BenchCommand;

#[derive(Debug, clap::Args)]
pub struct AllArgs {
    /// Folder for the JSONs and the summary (created).
    #[arg(long)]
    pub out: PathBuf,
    /// The shared data folder (the EEGLAB sample, MIT-BIH record 100).
    #[arg(long, default_value = "../shared/data")]
    pub data: PathBuf,
    /// Benchmarks left out, by name (io, peak, first-call, xapen, xapen-cpu, xapen-night, cwt,
    /// hermite, deblink, live, group).
    #[arg(long, value_delimiter = ',')]
    pub skip: Vec<String>,
    /// Only rebuild summary.json and summary.md from the JSONs already in --out.
    #[arg(long)]
    pub summary_only: bool,
}

/// One benchmark: its name (and JSON's), and its command line after `ede bench`.
fn steps(args: &AllArgs) -> Vec<(&'static str, Vec<String>)> {
    let data = |p: &str| args.data.join(p).display().to_string();
    let eeglab = data("eeg/eeglab_sample_32ch_128hz.edf");
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    vec![
        ("io", s(&["io", "--frames", "30"])),
        ("peak", s(&["peak"])),
        // Before anything else compiles in this process; its cases run in processes of their own.
        ("first-call", s(&["first-call"])),
        (
            "xapen",
            s(&["xapen", "--repeats", "7", "--brute-epochs", "1"]),
        ),
        // The interactive CPU path of a machine without a usable GPU, on two threads whatever
        // this machine has: the EEGLAB sample's size, 30 channels x 1 epoch of 1024.
        (
            "xapen-cpu",
            s(&[
                "xapen",
                "--channels",
                "30",
                "--epochs",
                "20",
                "--cpu-epochs",
                "20",
                "--brute-epochs",
                "0",
                "--no-gpu",
                "--threads",
                "2",
            ]),
        ),
        ("xapen-night", s(&["xapen-night"])),
        ("cwt", s(&["cwt"])),
        (
            "hermite",
            [
                s(&["hermite", "--cpu-beats", "10000", "--record"]),
                vec![data("ecg/mitdb/100.hea")],
            ]
            .concat(),
        ),
        (
            "deblink",
            [s(&["deblink", "--record"]), vec![eeglab.clone()]].concat(),
        ),
        ("live", [s(&["live", "--record"]), vec![eeglab]].concat()),
        ("group", s(&["group", "--repeats", "1"])),
    ]
}

#[derive(Parser)]
#[command(name = "ede bench")]
struct One {
    #[command(subcommand)]
    cmd: BenchCommand,
}

pub fn run(args: &AllArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut failed = Vec::new();
    if !args.summary_only {
        for (name, argv) in steps(args) {
            if args.skip.iter().any(|s| s == name) {
                continue;
            }
            let json = args.out.join(format!("{name}.json"));
            let argv = [argv, vec!["--out".into(), json.display().to_string()]].concat();
            eprintln!("== ede bench {}", argv.join(" "));
            let t = std::time::Instant::now();
            let one = One::try_parse_from(std::iter::once("ede bench".to_string()).chain(argv))?;
            match super::run(&one.cmd) {
                Ok(()) => eprintln!("== {name}: {:.1} s", t.elapsed().as_secs_f64()),
                Err(e) => {
                    eprintln!("== {name} failed: {e:#}");
                    failed.push(name);
                }
            }
        }
    }
    let rows = summary(&args.out);
    crate::cli::write_json(&rows, Some(&args.out.join("summary.json")))?;
    let table = markdown(&rows);
    std::fs::write(args.out.join("summary.md"), &table)?;
    println!("{table}");
    if !failed.is_empty() {
        anyhow::bail!("these benchmarks failed: {}", failed.join(", "));
    }
    Ok(())
}

/// One line of the summary table: lower is better for every figure (times in seconds, the
/// crossover in channels), so the goal is met where ede <= goal.
#[derive(Debug, Serialize)]
pub struct Row {
    pub workload: &'static str,
    pub ede: Option<f64>,
    pub unit: &'static str,
    /// None where the figure is reported without a goal.
    pub goal: Option<f64>,
    pub paper: Option<f64>,
    pub peer: Option<f64>,
    pub peer_is: &'static str,
    pub ceiling: Option<f64>,
    pub ceiling_is: &'static str,
    /// The same workload in PyTorch on the same GPU (`torch.json`).
    pub torch: Option<f64>,
    pub torch_is: Option<String>,
    pub meets_goal: Option<bool>,
    pub ran_on: Option<String>,
}

/// A number at a JSON path ("gpu.subject_s.median"; "runs[channels=256,samples=20000]" picks
/// the array element whose fields have those values).
fn at(v: &Value, path: &str) -> Option<f64> {
    let matches = |e: &Value, cond: &str| {
        let Some((field, want)) = cond.split_once('=') else {
            return false;
        };
        e.get(field).is_some_and(|x| match x {
            Value::String(s) => s == want,
            Value::Null => want == "null",
            x => x.as_f64().is_some_and(|v| want.parse() == Ok(v)),
        })
    };
    let mut cur = v;
    for part in path.split('.') {
        cur = match part.split_once('[') {
            Some((key, pick)) => {
                let conds: Vec<&str> = pick.trim_end_matches(']').split(',').collect();
                cur.get(key)?
                    .as_array()?
                    .iter()
                    .find(|e| conds.iter().all(|c| matches(e, c)))?
            }
            None => cur.get(part)?,
        };
    }
    cur.as_f64()
}

fn read(dir: &Path, name: &str) -> Value {
    std::fs::read_to_string(dir.join(format!("{name}.json")))
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null)
}

fn device(v: &Value) -> Option<String> {
    ["gpu.adapter", "gpu", "ran_on", "cpu"]
        .iter()
        .find_map(|p| {
            p.split('.')
                .try_fold(v, |c, k| c.get(k))
                .and_then(Value::as_str)
        })
        .map(str::to_string)
}

/// The table's rows from the JSONs in `dir` (missing figures stay empty).
pub fn summary(dir: &Path) -> Vec<Row> {
    let xapen = read(dir, "xapen");
    let xcpu = read(dir, "xapen-cpu");
    let night = read(dir, "xapen-night");
    let cwt = read(dir, "cwt");
    let hermite = read(dir, "hermite");
    let deblink = read(dir, "deblink");
    let live = read(dir, "live");
    let first = read(dir, "first-call");
    let torch = read(dir, "torch");
    // The parity split's flops (half the definition's) at the FMA rate WGSL reaches here.
    let peak = at(&read(dir, "peak"), "peak_flops_per_s");
    let fp32_ceiling_s = at(&hermite, "throughput[order=30].flops")
        .zip(peak)
        .map(|(f, peak)| f / 2.0 / peak);
    let ica = "gpu_crossover[channels=256,samples=20000]";
    let crossover = deblink
        .get("gpu_crossover")
        .and_then(Value::as_array)
        .and_then(|runs| {
            runs.iter()
                .filter(|r| at(r, "samples") == Some(20000.0))
                .find(|r| {
                    at(r, "gpu_s")
                        .zip(at(r, "cpu_s"))
                        .is_some_and(|(g, c)| g < c)
                })
                .and_then(|r| at(r, "channels"))
        });
    let row = |workload, ede: Option<f64>, unit, goal: f64, src: &Value| Row {
        workload,
        ede,
        unit,
        goal: Some(goal),
        paper: None,
        peer: None,
        peer_is: "",
        ceiling: None,
        ceiling_is: "",
        torch: None,
        torch_is: None,
        meets_goal: ede.map(|e| e <= goal),
        ran_on: device(src),
    };
    let mut rows = vec![
        Row {
            paper: Some(60.0),
            peer: at(&xapen, "cpu_brute.subject_s"),
            peer_is: "brute force (the paper's loop), this machine's CPU",
            ..row(
                "Cross-ApEn, paper subject (148 ch x 49 epochs x 1024, m=1)",
                at(&xapen, "gpu.subject_s.median"),
                "s",
                0.03,
                &xapen,
            )
        },
        row(
            "Cross-ApEn, paper subject, first call of a new process (ede's pipeline cache, driver's off)",
            at(&first, "cached.first_subject_s"),
            "s",
            0.06,
            &first,
        ),
        Row {
            goal: None,
            meets_goal: None,
            ..row(
                "Cross-ApEn, paper subject, first call ever (both caches cold)",
                at(&first, "cold.first_subject_s"),
                "s",
                0.0,
                &first,
            )
        },
        row(
            "Cross-ApEn tab 2 s after the file opens (kernels prepared; both caches cold)",
            at(&first, "tab.first_subject_s"),
            "s",
            0.06,
            &first,
        ),
        Row {
            peer: at(&night, "host_s"),
            peer_is: "reading and normalizing alone (warm)",
            ..row(
                "Cross-ApEn, whole night 64 ch x 16 h from a cold page cache",
                at(&night, "cold_s"),
                "s",
                3.0,
                &night,
            )
        },
        row(
            "Cross-ApEn interactive, 148 ch x 1 epoch",
            at(&xapen, "gpu.interactive[channels=148].recompute_s.median"),
            "s",
            1e-3,
            &xapen,
        ),
        row(
            "Cross-ApEn interactive on the CPU, 30 ch x 1 epoch, 2 threads",
            at(&xcpu, "cpu_fast.subject_s").map(|s| s / 20.0),
            "s",
            0.033,
            &xcpu,
        ),
        Row {
            ceiling: at(&cwt, "batch.modelled_bytes").map(|b| b / 2.8e12),
            ceiling_is: "its traffic (the inverse FFT's intermediate, forward FFT, spectra, \
                         partial sums) at the 2.8 TB/s copy rate",
            ..row(
                "Morlet batch, 64 ch x 1 h x 1600 Hz x 40 scales -> band power",
                at(&cwt, "batch.gpu_s"),
                "s",
                0.8,
                &cwt,
            )
        },
        row(
            "Morlet interactive, 19 ch x 30 s x 256 Hz x 64 scales",
            at(&cwt, "interactive.gpu_parameter_change_s.median"),
            "s",
            0.5e-3,
            &cwt,
        ),
        Row {
            paper: at(&hermite, "throughput[order=30].paper_gpu_s"),
            ceiling: fp32_ceiling_s,
            ceiling_is: "the parity split's flops (half the definition's) at the FMA rate WGSL reaches (bench peak)",
            ..row(
                "Hermite, 1e5 beats, N = 30, S = 100",
                at(&hermite, "throughput[order=30].gpu_fit_s.median"),
                "s",
                7e-3,
                &hermite,
            )
        },
        row(
            "Hermite interactive refit, 2,272 beats, N = 30",
            at(&hermite, "interactive[order=30].gpu_refit_s.median"),
            "s",
            0.3e-3,
            &hermite,
        ),
        Row {
            peer: at(&deblink, &format!("{ica}.cpu_s")),
            peer_is: "ede's FastICA on this machine's CPU threads",
            ..row(
                "FastICA on the GPU, 256 x 20000, 200 iterations",
                at(&deblink, &format!("{ica}.gpu_s")),
                "s",
                0.3,
                &deblink,
            )
        },
        row(
            "FastICA: channels from which the GPU beats the CPU (x 20000)",
            crossover,
            "channels",
            32.0,
            &deblink,
        ),
        row(
            "Live tab frames, 64 x 512 Hz at max speed, p99",
            at(&live, "frames[stream=64ch-512hz].p99_s"),
            "s",
            16e-3,
            &live,
        ),
    ];
    // PyTorch's figure of each workload it has, matched by name.
    for entry in torch
        .get("workloads")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = entry.get("workload").and_then(Value::as_str);
        if let Some(r) = rows.iter_mut().find(|r| Some(r.workload) == name) {
            r.torch = at(entry, "seconds");
            r.torch_is = entry
                .get("what")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
    }
    rows
}

/// Three significant digits, in ms below 0.1 s.
fn fmt(x: Option<f64>, unit: &str) -> String {
    let sig = |v: f64| {
        let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 6) as usize;
        format!("{v:.decimals$}")
    };
    match (x, unit) {
        (None, _) => String::new(),
        (Some(v), "s") if v < 0.1 => format!("{} ms", sig(v * 1e3)),
        (Some(v), "s") => format!("{} s", sig(v)),
        (Some(v), u) if v.fract() == 0.0 => format!("{v} {u}"),
        (Some(v), u) => format!("{} {u}", sig(v)),
    }
}

/// The summary as a markdown table.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| workload | ede | goal | paper | peer | ceiling | ede / ceiling | PyTorch | ede / PyTorch | goal met |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let note = |v: String, is: &str| {
            if v.is_empty() || is.is_empty() {
                v
            } else {
                format!("{v} ({is})")
            }
        };
        // ede's time over another's: "2.9x" of the ceiling, "0.45" of PyTorch's.
        let ratio = |of: Option<f64>, digits: usize, suffix: &str| {
            (r.ede.zip(of))
                .map(|(e, c)| format!("{:.digits$}{suffix}", e / c))
                .unwrap_or_default()
        };
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.workload,
            fmt(r.ede, r.unit),
            fmt(r.goal, r.unit),
            fmt(r.paper, r.unit),
            note(fmt(r.peer, r.unit), r.peer_is),
            note(fmt(r.ceiling, r.unit), r.ceiling_is),
            ratio(r.ceiling, 1, "x"),
            fmt(r.torch, r.unit),
            ratio(r.torch, 2, ""),
            match r.meets_goal {
                Some(true) => "yes",
                Some(false) => "no",
                None => "",
            }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_pick_fields_and_array_elements() {
        let v: Value = serde_json::json!({
            "gpu": {"subject_s": {"median": 0.5}},
            "runs": [
                {"channels": 256, "samples": 5000, "gpu_s": 1.0},
                {"channels": 256, "samples": 20000, "gpu_s": 2.0},
                {"stream": "a", "speed": null, "p": 3.0},
            ],
        });
        assert_eq!(at(&v, "gpu.subject_s.median"), Some(0.5));
        assert_eq!(at(&v, "runs[channels=256,samples=20000].gpu_s"), Some(2.0));
        assert_eq!(at(&v, "runs[channels=256].gpu_s"), Some(1.0));
        assert_eq!(at(&v, "runs[stream=a,speed=null].p"), Some(3.0));
        assert_eq!(at(&v, "runs[channels=32].gpu_s"), None);
        assert_eq!(at(&v, "gpu.missing"), None);
    }

    #[test]
    fn the_summary_reads_what_the_benchmarks_wrote() {
        let dir = std::env::temp_dir().join(format!("ede-bench-all-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let xapen = serde_json::json!({
            "gpu": {"adapter": "Test GPU", "subject_s": {"median": 0.02}, "first_subject_s": 0.1},
            "cpu_brute": {"subject_s": 400.0},
        });
        std::fs::write(dir.join("xapen.json"), xapen.to_string()).unwrap();
        let rows = summary(&dir);
        assert_eq!(rows[0].ede, Some(0.02));
        assert_eq!(rows[0].meets_goal, Some(true));
        assert_eq!(rows[0].ran_on.as_deref(), Some("Test GPU"));
        let first = serde_json::json!({
            "adapter": "Test GPU",
            "cold": {"first_subject_s": 0.2}, "cached": {"first_subject_s": 0.05},
        });
        std::fs::write(dir.join("first-call.json"), first.to_string()).unwrap();
        let torch = serde_json::json!({"workloads": [
            {"workload": rows[0].workload, "seconds": 0.08, "what": "brute force"},
            {"workload": "not ede's", "seconds": 1.0},
        ]});
        std::fs::write(dir.join("torch.json"), torch.to_string()).unwrap();
        let rows = summary(&dir);
        assert_eq!(rows[1].meets_goal, Some(true));
        // Reported without a goal: neither met nor missed.
        assert_eq!(
            (rows[2].ede, rows[2].goal, rows[2].meets_goal),
            (Some(0.2), None, None)
        );
        // Benchmarks that did not run leave their rows empty, not failed.
        assert!(rows[3].ede.is_none() && rows[3].meets_goal.is_none());
        assert_eq!(rows[0].torch, Some(0.08));
        assert!(rows[1..].iter().all(|r| r.torch.is_none()));
        let table = markdown(&rows);
        assert!(
            table.contains("| 20.0 ms | 30.0 ms | 60.0 s | 400 s"),
            "{table}"
        );
        assert!(table.contains("| 80.0 ms | 0.25 | yes |"), "{table}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
