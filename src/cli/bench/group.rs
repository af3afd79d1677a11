//! `ede bench group`: the group step of a study (issue 25's goal: 1,000 recordings' outputs in
//! under 5 s on 2 cores). The outputs are generated in the shapes the batch commands write for
//! a 10-minute, 32-channel EEG with an ECG channel, as the study workflow runs them: a 32 x 32
//! Cross-ApEn matrix, band power over 44 scales in 30 s blocks (the workflow's default), 700
//! Hermite-fitted beats, 150 blinks and their quality measure. Then `ede group`'s work is timed:
//! reading them all, writing the tables, drawing the figures.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::Stats;
use crate::analysis::group::{self, figures};
use crate::cli::write_json;
use crate::recording::bids::read_tsv;

#[derive(Debug, clap::Args)]
pub struct GroupBenchArgs {
    /// Recordings whose outputs are generated.
    #[arg(long, default_value_t = 1000)]
    pub recordings: usize,
    /// Timed repeats.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Where the outputs are generated (default: a temporary folder, removed after).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Serialize)]
struct Report {
    recordings: usize,
    files: usize,
    bytes: u64,
    threads: usize,
    collect_s: Stats,
    tables_s: Stats,
    figures_s: Stats,
    total_s: Stats,
    goal_s: f64,
}

const CHANNELS: usize = 32;
const SCALES: usize = 44;
const BLOCKS: usize = 20;
const BEATS: usize = 700;
const BLINKS: usize = 150;

/// A small deterministic generator (xorshift), so that runs compare.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Writes the outputs of `n` recordings into `dir` (BIDS derivatives layout) and a
/// `participants.tsv` beside; returns the count of files and their bytes.
fn generate(dir: &Path, n: usize) -> anyhow::Result<(usize, u64)> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let labels: Vec<String> = (0..CHANNELS).map(|c| format!("E{c}")).collect();
    let freqs: Vec<f64> = (0..SCALES)
        .map(|k| 40.0 * 2f64.powf(-(k as f64) / 8.0))
        .collect();
    let mut participants = String::from("participant_id\tage\tgroup\n");
    let (mut files, mut bytes) = (0usize, 0u64);
    let mut put = |path: PathBuf, text: String| -> anyhow::Result<()> {
        files += 1;
        bytes += text.len() as u64;
        std::fs::write(path, text)?;
        Ok(())
    };
    for r in 0..n {
        let sub = format!("{r:04}");
        let group = if r % 2 == 0 { "control" } else { "patient" };
        writeln!(participants, "sub-{sub}\t{}\t{group}", 20 + r % 50)?;
        let folder = dir.join(format!("sub-{sub}/eeg"));
        std::fs::create_dir_all(&folder)?;
        let stem = format!("sub-{sub}_task-sleep");
        let file = |desc: &str| folder.join(format!("{stem}_desc-{desc}"));
        let matrix: Vec<Vec<f64>> = (0..CHANNELS)
            .map(|_| (0..CHANNELS).map(|_| 1.0 + rng.next()).collect())
            .collect();
        let xapen = serde_json::json!({
            "file": format!("{stem}_eeg.edf"), "channels": labels, "m": 2, "r": 0.2,
            "matrix": matrix, "provenance": crate::cli::provenance(),
        });
        put(file("xapen.json"), serde_json::to_string_pretty(&xapen)?)?;
        let mut csv = String::from("channel,start_s");
        for f in &freqs {
            write!(csv, ",{f:.4}Hz")?;
        }
        csv.push('\n');
        for b in 0..BLOCKS {
            for l in &labels {
                write!(csv, "{l},{}", b * 30)?;
                for _ in 0..SCALES {
                    write!(csv, ",{:e}", (100.0 * rng.next()) as f32)?;
                }
                csv.push('\n');
            }
        }
        put(file("bandpower.csv"), csv)?;
        let beats: Vec<serde_json::Value> = (0..BEATS)
            .map(|k| {
                let label = if k % 20 == 0 { "V" } else { "N" };
                let coefficients: Vec<f32> = (0..7).map(|_| rng.next() as f32).collect();
                serde_json::json!({
                    "sample": k * 200, "time_s": k as f64 * 0.8, "label": label,
                    "sigma": 0.012 + 0.006 * rng.next(), "mse": 500.0 * rng.next(),
                    "coefficients": coefficients,
                })
            })
            .collect();
        let hermite = serde_json::json!({
            "record": format!("{stem}_eeg.edf"), "channel": "ECG", "order": 6, "unit": "uV",
            "beats": beats, "provenance": crate::cli::provenance(),
        });
        put(
            file("hermite.json"),
            serde_json::to_string_pretty(&hermite)?,
        )?;
        let blinks: Vec<serde_json::Value> = (0..BLINKS)
            .map(|k| serde_json::json!({"peak_s": k as f64 * 4.0, "onset_s": k as f64 * 4.0 - 0.1, "duration_s": 0.25}))
            .collect();
        let deblink = serde_json::json!({
            "file": format!("{stem}_eeg.edf"), "duration_s": 600.0, "blinks": blinks,
            "events": blinks, "provenance": crate::cli::provenance(),
        });
        put(
            file("deblink.json"),
            serde_json::to_string_pretty(&deblink)?,
        )?;
        let quality = serde_json::json!({
            "frontal_residual_pct": 10.0 * rng.next(), "posterior_change_pct": rng.next(),
        });
        put(
            file("blinkquality.json"),
            serde_json::to_string_pretty(&quality)?,
        )?;
    }
    std::fs::write(dir.join("participants.tsv"), participants)?;
    Ok((files, bytes))
}

pub fn run(args: &GroupBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(args.recordings > 0 && args.repeats > 0, "nothing to time");
    let temp;
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => {
            temp = tempfile_dir()?;
            temp.0.clone()
        }
    };
    let outputs = dir.join("derivatives");
    std::fs::create_dir_all(&outputs)?;
    eprintln!(
        "ede bench group: generating {} recordings' outputs",
        args.recordings
    );
    let (files, bytes) = generate(&outputs, args.recordings)?;
    let participants = read_tsv(&outputs.join("participants.tsv"))?;
    let (mut collect, mut tables, mut draw, mut total) = (vec![], vec![], vec![], vec![]);
    for k in 0..args.repeats {
        let t = Instant::now();
        let g = group::collect(&outputs, Some(&participants))?;
        let t1 = t.elapsed().as_secs_f64();
        g.write_tables(&outputs.join("group"))?;
        let t2 = t.elapsed().as_secs_f64();
        figures::draw_all(&g, &outputs.join("group/figures"), Some("group"))?;
        let t3 = t.elapsed().as_secs_f64();
        anyhow::ensure!(
            g.xapen.len() == args.recordings && g.blinks.len() == args.recordings,
            "the group step found {} of {} recordings",
            g.xapen.len(),
            args.recordings
        );
        eprintln!(
            "round {}: read {t1:.3} s, tables {:.3} s, figures {:.3} s, total {t3:.3} s",
            k + 1,
            t2 - t1,
            t3 - t2
        );
        collect.push(t1);
        tables.push(t2 - t1);
        draw.push(t3 - t2);
        total.push(t3);
    }
    let report = Report {
        recordings: args.recordings,
        files,
        bytes,
        threads: rayon::current_num_threads(),
        collect_s: Stats::of(collect),
        tables_s: Stats::of(tables),
        figures_s: Stats::of(draw),
        total_s: Stats::of(total),
        goal_s: 5.0,
    };
    write_json(&report, args.out.as_deref())
}

/// A temporary folder removed when dropped (the bench's generated outputs).
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tempfile_dir() -> anyhow::Result<TempDir> {
    let dir = std::env::temp_dir().join(format!("ede-bench-group-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(TempDir(dir))
}
