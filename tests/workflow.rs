//! The study workflow (`workflow/Snakefile`) run by Snakemake over a small BIDS dataset: the
//! fixture's 6 recordings (3 subjects in 2 groups, 2 tasks) and a seventh, broken one. Needs the
//! `snakemake` that `./setup.sh` installs (`.venv/bin/snakemake`, or one on the PATH).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `.venv/bin/snakemake`, else the one on the PATH.
pub fn snakemake() -> PathBuf {
    let local = root().join(".venv/bin/snakemake");
    if local.is_file() {
        return local;
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("snakemake"))
            .find(|p| p.is_file())
    });
    on_path.expect("snakemake is not installed: run ./setup.sh (it installs it into .venv)")
}

/// The fixture dataset, plus sub-04 whose recording is garbage (in the patient group).
fn dataset(dir: &Path) -> PathBuf {
    let bids = dir.join("study");
    common::copy_dir(&root().join("tests/fixtures/bids"), &bids);
    let broken = bids.join("sub-04/eeg");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join("sub-04_task-rest_eeg.edf"),
        b"0       not an EDF header at all",
    )
    .unwrap();
    let p = bids.join("participants.tsv");
    let mut t = std::fs::read_to_string(&p).unwrap();
    t.push_str("sub-04\t52\tM\tR\tpatient\n");
    std::fs::write(p, t).unwrap();
    bids
}

/// Runs the workflow; returns its combined output.
fn run_workflow(bids: &Path, out: &Path, work: &Path, extra: &[&str]) -> String {
    run_workflow_with(bids, out, work, extra, &[], &[])
}

fn run_workflow_with(
    bids: &Path,
    out: &Path,
    work: &Path,
    extra: &[&str],
    config: &[&str],
    env: &[(&str, String)],
) -> String {
    let output = Command::new(snakemake())
        .arg("-s")
        .arg(root().join("workflow/Snakefile"))
        .arg("--directory")
        .arg(work)
        .args(["--cores", "2"])
        .args(extra)
        .arg("--config")
        .arg(format!("bids_dir={}", bids.display()))
        .arg(format!("output_dir={}", out.display()))
        .arg(format!("ede={}", env!("CARGO_BIN_EXE_ede")))
        .args(if config.is_empty() {
            &["backend=cpu"][..]
        } else {
            config
        })
        .env("WGPU_BACKEND", "vulkan")
        .envs(env.iter().map(|(k, v)| (*k, v)))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "snakemake failed:\n{text}");
    text
}

fn csv(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    (text.lines())
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_study_runs_through_snakemake_into_group_tables() {
    let dir = tempfile::tempdir().unwrap();
    let bids = dataset(dir.path());
    let out = dir.path().join("out");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    run_workflow(&bids, &out, &work, &[]);

    // The derivatives' description, and every job's outcome: the broken recording failed in
    // each analysis (hermite skips it: it has no ECG channel to fit) and nothing else did.
    assert_eq!(
        json(&out.join("dataset_description.json"))["DatasetType"],
        "derivative"
    );
    let stems: Vec<String> = ["01", "02", "03"]
        .iter()
        .flat_map(|s| ["oddball", "rest"].map(|t| format!("sub-{s}_task-{t}")))
        .collect();
    for analysis in ["xapen", "bandpower", "hermite", "deblink"] {
        for stem in &stems {
            let status = out.join(format!("status/{analysis}/{stem}.status"));
            assert_eq!(
                std::fs::read_to_string(&status).unwrap().trim(),
                "ok",
                "{}",
                std::fs::read_to_string(out.join(format!("logs/{analysis}/{stem}.log")))
                    .unwrap_or_default()
            );
        }
        let broken = out.join(format!("status/{analysis}/sub-04_task-rest.status"));
        let expected = if analysis == "hermite" {
            "skipped"
        } else {
            "failed"
        };
        assert_eq!(
            std::fs::read_to_string(broken).unwrap().trim(),
            expected,
            "{analysis}"
        );
    }

    // The group tables: participants joined, one row per recording and measured thing, values
    // as the per-recording CLI gives them.
    let g = out.join("group");
    let xapen = csv(&g.join("xapen.csv"));
    assert_eq!(
        xapen[0],
        [
            "subject",
            "session",
            "task",
            "run",
            "age",
            "sex",
            "hand",
            "group",
            "channel_a",
            "channel_b",
            "xapen"
        ]
    );
    let file = bids.join("sub-02/eeg/sub-02_task-rest_eeg.vhdr");
    let direct = common::ede(&["xapen", file.to_str().unwrap(), "--backend", "cpu"]);
    assert!(direct.status.success());
    let direct: serde_json::Value = serde_json::from_slice(&direct.stdout).unwrap();
    let channels = direct["channels"].as_array().unwrap();
    // sub-02's bad channel (channels.tsv) is left out when the workflow names the file alone.
    assert_eq!(channels.len(), 8);
    let rows: Vec<&Vec<String>> = (xapen.iter())
        .filter(|r| r[0] == "02" && r[2] == "rest")
        .collect();
    assert_eq!(rows.len(), 64);
    for r in &rows {
        assert_eq!(r[7], "patient");
        let (a, b) = (
            channels.iter().position(|c| *c == *r[8]).unwrap(),
            channels.iter().position(|c| *c == *r[9]).unwrap(),
        );
        let v = direct["matrix"][a][b].as_f64().unwrap();
        assert!((r[10].parse::<f64>().unwrap() - v).abs() < 1e-12, "{r:?}");
    }
    let blinks = csv(&g.join("blinks.csv"));
    assert_eq!(blinks.len(), 1 + 6);
    for r in &blinks[1..] {
        let stem = format!("sub-{}_task-{}", r[0], r[2]);
        let report = json(&out.join(format!("sub-{}/eeg/{stem}_desc-deblink.json", r[0])));
        assert_eq!(
            r[9].parse::<usize>().unwrap(),
            report["blinks"].as_array().unwrap().len()
        );
        assert!(
            report["provenance"]["ede_version"].is_string(),
            "provenance in {stem}"
        );
        // The blink-locked residual, measured on each cleaned recording.
        assert!(r[12].parse::<f64>().is_ok(), "{r:?}");
    }
    let hermite = csv(&g.join("hermite.csv"));
    assert_eq!(hermite.len(), 1 + 6);
    let bandpower = csv(&g.join("bandpower.csv"));
    assert!(bandpower[1..].iter().any(|r| r[9] == "alpha"));
    let failures = csv(&g.join("failures.csv"));
    let failed: Vec<(&str, &str)> = (failures[1..].iter())
        .map(|r| (r[0].as_str(), r[8].as_str()))
        .collect();
    assert_eq!(
        failed,
        [("04", "bandpower"), ("04", "deblink"), ("04", "xapen")]
    );
    for figure in ["xapen", "bandpower", "hermite", "blinks"] {
        let png = g.join(format!("figures/{figure}.png"));
        let img = image::open(&png).unwrap();
        assert!(img.width() >= 1000, "{}", png.display());
    }

    // A second run has nothing left to do; a job whose status is deleted (with the group
    // table that needs it) runs again, alone.
    let again = run_workflow(&bids, &out, &work, &[]);
    assert!(again.contains("Nothing to be done"), "{again}");
    std::fs::remove_file(out.join("status/xapen/sub-01_task-rest.status")).unwrap();
    std::fs::remove_file(g.join("blinks.csv")).unwrap();
    let again = run_workflow(&bids, &out, &work, &[]);
    assert_eq!(again.matches("rule xapen:").count(), 1, "{again}");
    for other in ["rule deblink:", "rule hermite:", "rule bandpower:"] {
        assert!(!again.contains(other), "{again}");
    }
}

/// GPU jobs on a host of several GPUs: each holds one (a lock) and names it to ede by
/// `EDE_ADAPTER`. Here, without a GPU, ede says so and runs on the CPU.
#[test]
fn local_gpu_jobs_each_take_a_gpu_of_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let bids = dir.path().join("study");
    common::copy_dir(&root().join("tests/fixtures/bids"), &bids);
    let (out, work) = (dir.path().join("out"), dir.path().join("work"));
    std::fs::create_dir_all(&work).unwrap();
    run_workflow_with(
        &bids,
        &out,
        &work,
        &["--resources", "gpu=2", "--set-threads", "xapen=1"],
        &["backend=gpu", "gpus=2", "analyses=[xapen]"],
        &[],
    );
    for e in std::fs::read_dir(out.join("logs/xapen")).unwrap().flatten() {
        let log = std::fs::read_to_string(e.path()).unwrap();
        assert!(
            log.lines().any(|l| l == "GPU 0" || l == "GPU 1"),
            "{}: {log}",
            e.path().display()
        );
        assert!(log.contains("EDE_ADAPTER="), "{log}");
    }
    let xapen = csv(&out.join("group/xapen.csv"));
    assert_eq!(xapen.len(), 1 + 2 * (9 * 9 + 8 * 8 + 9 * 9));
}

/// A one-node Slurm cluster (`workflow/slurm/one-node.sh`) in a folder, stopped when dropped.
struct Cluster {
    dir: PathBuf,
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        assert!(
            Path::new("/usr/sbin/slurmctld").is_file() && Path::new("/usr/sbin/munged").is_file(),
            "Slurm and munge are not installed: run ./setup.sh"
        );
        let out = Command::new(root().join("workflow/slurm/one-node.sh"))
            .arg("start")
            .arg(dir)
            .output()
            .unwrap();
        let cluster = Cluster {
            dir: dir.to_path_buf(),
        };
        assert!(
            out.status.success(),
            "the cluster did not start: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        cluster
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = Command::new(root().join("workflow/slurm/one-node.sh"))
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

/// The same study through Snakemake's Slurm executor on a one-node cluster started here: the
/// group tables equal the local run's.
#[test]
fn the_same_study_runs_on_a_one_node_slurm_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let bids = dir.path().join("study");
    common::copy_dir(&root().join("tests/fixtures/bids"), &bids);
    let (local, work) = (dir.path().join("local"), dir.path().join("work"));
    std::fs::create_dir_all(&work).unwrap();
    run_workflow(&bids, &local, &work, &[]);

    let cluster = Cluster::start(&dir.path().join("slurm"));
    let path = format!(
        "{}:{}",
        cluster.dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = [
        (
            "SLURM_CONF",
            cluster.dir.join("slurm.conf").display().to_string(),
        ),
        ("PATH", path),
    ];
    let (slurm, work) = (dir.path().join("slurm-out"), dir.path().join("slurm-work"));
    std::fs::create_dir_all(&work).unwrap();
    let log = run_workflow_with(
        &bids,
        &slurm,
        &work,
        &[
            "--executor",
            "slurm",
            "--jobs",
            "6",
            "--slurm-no-account",
            "--slurm-status-command",
            "squeue",
            "--slurm-init-seconds-before-status-checks",
            "1",
            // One CPU a job, so that the 2-CPU node runs two at a time.
            "--set-threads",
            "xapen=1",
            "bandpower=1",
            "hermite=1",
            "deblink=1",
        ],
        &[],
        &env,
    );
    // The jobs went through Slurm.
    assert!(log.contains("SLURM run ID"), "{log}");
    for table in [
        "xapen.csv",
        "bandpower.csv",
        "hermite.csv",
        "blinks.csv",
        "failures.csv",
    ] {
        let (a, b) = (
            std::fs::read_to_string(local.join("group").join(table)).unwrap(),
            std::fs::read_to_string(slurm.join("group").join(table)).unwrap(),
        );
        assert_eq!(a, b, "{table}");
    }
    drop(cluster);
}
