//! The study workflow (`workflow/Snakefile`) run by Snakemake over a small BIDS dataset: the
//! fixture's 6 recordings (3 subjects in 2 groups, 2 tasks) and a seventh, broken one. Needs the
//! `snakemake` that `./setup.sh` installs (`.venv/bin/snakemake`, or one on the PATH).

mod common;

use std::os::unix::process::CommandExt;
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

/// The workflow's command on `bids` into `out` (Snakemake's own state in `work`), with 2 cores,
/// `extra` arguments and `config` entries (default: backend=cpu).
fn workflow(bids: &Path, out: &Path, work: &Path, extra: &[&str], config: &[&str]) -> Command {
    let mut c = Command::new(snakemake());
    c.arg("-s")
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
        });
    c
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
    let output = workflow(bids, out, work, extra, config)
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
    for analysis in ["xapen", "bandpower", "hermite", "deblink", "ica"] {
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
        [
            ("04", "bandpower"),
            ("04", "deblink"),
            ("04", "ica"),
            ("04", "xapen")
        ]
    );
    // ICA: per recording and ICLabel class, the components as its labels file counts them.
    let ica = csv(&g.join("ica.csv"));
    assert_eq!(
        ica[0][8..],
        [
            "iclabel_class",
            "components",
            "variance_pct",
            "excluded",
            "method",
            "note"
        ]
    );
    assert_eq!(ica.len(), 1 + 6 * 7);
    for stem in &stems {
        let sub = &stem[4..6];
        let labels = json(&out.join(format!("sub-{sub}/eeg/{stem}_desc-iclabel.json")));
        let components = labels["components"].as_array().unwrap();
        let task = stem.split("task-").nth(1).unwrap();
        let rows: Vec<&Vec<String>> = (ica[1..].iter())
            .filter(|r| r[0] == sub && r[2] == task)
            .collect();
        assert_eq!(rows.len(), 7, "{stem}");
        let counted: usize = rows.iter().map(|r| r[9].parse::<usize>().unwrap()).sum();
        assert_eq!(counted, components.len(), "{stem}");
        for (c, class) in ede::analysis::ica::iclabel::CLASSES.iter().enumerate() {
            let argmax = (components.iter())
                .filter(|x| {
                    let p: Vec<f64> = serde_json::from_value(x["iclabel"].clone()).unwrap();
                    (0..7).max_by(|&a, &b| p[a].total_cmp(&p[b])) == Some(c)
                })
                .count();
            assert_eq!(rows[c][8], *class);
            assert_eq!(
                rows[c][9].parse::<usize>().unwrap(),
                argmax,
                "{stem} {class}"
            );
        }
        let fif = out.join(format!("sub-{sub}/eeg/{stem}_desc-decomposition_ica.fif"));
        assert!(fif.is_file(), "{}", fif.display());
    }
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

/// A run killed mid-way (the whole Snakemake process group, as a lost node or a ^C would) resumes:
/// after `--unlock`, the next run finishes what was left, and the tables equal an uninterrupted
/// run's. And a plain folder of recordings (no BIDS) is a study too, one subject per file.
#[test]
fn a_killed_run_resumes_and_a_plain_folder_is_a_study() {
    let dir = tempfile::tempdir().unwrap();
    let bids = dir.path().join("study");
    common::copy_dir(&root().join("tests/fixtures/bids"), &bids);
    let (out, work) = (dir.path().join("out"), dir.path().join("work"));
    std::fs::create_dir_all(&work).unwrap();
    let mut child = workflow(&bids, &out, &work, &[], &[])
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once a few jobs have ended (or after 60 s).
    let started = std::time::Instant::now();
    let done = |out: &Path| {
        std::fs::read_dir(out.join("status/xapen"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    while done(&out) < 3 && started.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // SAFETY: kill(2) on the process group this test started.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    child.wait().unwrap();
    assert!(
        !out.join("group/xapen.csv").exists(),
        "the run ended before the kill"
    );
    run_workflow(&bids, &out, &work, &["--unlock"]);
    run_workflow(&bids, &out, &work, &["--rerun-incomplete"]);
    let (again, work2) = (dir.path().join("again"), dir.path().join("work2"));
    std::fs::create_dir_all(&work2).unwrap();
    run_workflow(&bids, &again, &work2, &[]);
    for table in ["xapen.csv", "bandpower.csv", "hermite.csv", "blinks.csv"] {
        let (a, b) = (
            std::fs::read_to_string(out.join("group").join(table)).unwrap(),
            std::fs::read_to_string(again.join("group").join(table)).unwrap(),
        );
        assert_eq!(a, b, "{table}");
    }

    // A plain folder: each recording a subject named after its file.
    let plain = dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    for (from, to) in [
        ("sub-03_task-rest_eeg.edf", "night 1.edf"),
        ("sub-03_task-oddball_eeg.edf", "night2.edf"),
    ] {
        std::fs::copy(bids.join("sub-03/eeg").join(from), plain.join(to)).unwrap();
    }
    let (out, work) = (dir.path().join("plain-out"), dir.path().join("plain-work"));
    std::fs::create_dir_all(&work).unwrap();
    run_workflow(&plain, &out, &work, &[]);
    for sub in ["night1", "night2"] {
        let x = out.join(format!("sub-{sub}/eeg/sub-{sub}_desc-xapen.json"));
        assert!(x.is_file(), "{}", x.display());
    }
    assert_eq!(csv(&out.join("group/xapen.csv")).len(), 1 + 2 * 9 * 9);
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
            "ica=1",
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
