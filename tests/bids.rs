//! BIDS datasets: the fixture `tests/fixtures/bids` was written by mne-bids (3 subjects,
//! tasks rest and oddball, BrainVision and EDF), see `tests/fixtures/make_fixtures.py`.

mod common;

use std::path::{Path, PathBuf};

use ede::recording::ChannelType;
use ede::recording::bids::{Dataset, Filter};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bids")
}

/// A copy of the dataset to write derivatives into.
fn copy_dataset(to: &Path) -> PathBuf {
    let root = to.join("study");
    common::copy_dir(&fixture(), &root);
    root
}

#[test]
fn a_dataset_lists_its_runs_and_participants() {
    let ds = Dataset::scan(&fixture()).unwrap();
    assert_eq!(ds.name, "bids");
    let titles: Vec<String> = ds.runs.iter().map(|r| r.title()).collect();
    assert_eq!(
        titles,
        [
            "sub-01 · task-oddball",
            "sub-01 · task-rest",
            "sub-02 · task-oddball",
            "sub-02 · task-rest",
            "sub-03 · task-oddball",
            "sub-03 · task-rest"
        ]
    );
    assert!(ds.runs[4].path.extension().unwrap() == "edf");
    assert!(ds.runs[0].path.extension().unwrap() == "vhdr");
    let row = ds.participant("02").unwrap();
    assert_eq!(ds.participants.get(row, "age"), Some("31"));
    assert_eq!(ds.participants.get(row, "group"), Some("patient"));
    let f = Filter {
        subject: Some("3".into()),
        task: Some("rest".into()),
        ..Default::default()
    };
    let picked = ds.select(&f);
    assert_eq!(picked.len(), 1);
    assert_eq!(picked[0].stem(), "sub-03_task-rest");
}

/// A run opens with its sidecars: channels.tsv types and bad channels, events.tsv events,
/// electrodes.tsv positions.
#[test]
fn a_run_opens_with_its_sidecars() {
    let ds = Dataset::scan(&fixture()).unwrap();
    let run = ds
        .runs
        .iter()
        .find(|r| r.title() == "sub-02 · task-rest")
        .unwrap();
    let rec = run.open().unwrap();
    let by = |l: &str| &rec.signals[rec.signal_index(l).unwrap()];
    assert_eq!(by("VEOG").kind, ChannelType::Eog);
    assert_eq!(by("ECG").kind, ChannelType::Ecg);
    assert!(by("O2").bad && !by("O1").bad);
    assert!(
        !rec.brain_signals()
            .contains(&rec.signal_index("O2").unwrap())
    );
    let events =
        std::fs::read_to_string(run.path.with_file_name("sub-02_task-rest_events.tsv")).unwrap();
    assert_eq!(rec.annotations.len(), events.lines().count() - 1);
    assert_eq!(rec.annotations[0].text, "target");
    assert!((rec.annotations[0].onset - 1.0).abs() < 1e-9);
    assert!((rec.annotations[0].duration - 0.1).abs() < 1e-9);
    let fp1 = by("Fp1").position.unwrap();
    assert!(
        (fp1[0] + 0.0309).abs() < 1e-3 && (fp1[1] - 0.1146).abs() < 1e-3,
        "{fp1:?}"
    );
    // The EDF runs read the same way.
    let edf = ds
        .runs
        .iter()
        .find(|r| r.title() == "sub-03 · task-rest")
        .unwrap();
    let rec = edf.open().unwrap();
    assert_eq!(rec.signals.len(), 11);
    assert_eq!(rec.annotations[0].text, "target");
}

/// Every batch command runs over the dataset into derivatives/ede/ in the BIDS layout.
#[test]
fn batch_commands_write_bids_derivatives() {
    let dir = tempfile::tempdir().unwrap();
    let root = copy_dataset(dir.path());
    let r = root.to_str().unwrap();
    for args in [
        vec![
            "xapen",
            r,
            "--epochs",
            "1",
            "--epoch-len",
            "512",
            "--backend",
            "cpu",
        ],
        vec!["hermite", r, "--task", "rest", "--backend", "cpu"],
        vec![
            "cwt",
            r,
            "--all-channels",
            "--band-power",
            "unused",
            "--subject",
            "02",
            "--backend",
            "cpu",
        ],
        vec![
            "deblink",
            r,
            "--subject",
            "03",
            "--task",
            "rest",
            "--backend",
            "cpu",
        ],
    ] {
        let out = common::ede(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let d = root.join("derivatives/ede");
    let desc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("dataset_description.json")).unwrap())
            .unwrap();
    assert_eq!(desc["DatasetType"], "derivative");
    assert_eq!(desc["GeneratedBy"][0]["Name"], "ede");
    for sub in ["01", "02", "03"] {
        for task in ["rest", "oddball"] {
            let p = d.join(format!(
                "sub-{sub}/eeg/sub-{sub}_task-{task}_desc-xapen.json"
            ));
            let report: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
            // The brain channels, without the bad one.
            let n = if sub == "02" { 8 } else { 9 };
            assert_eq!(
                report["channels"].as_array().unwrap().len(),
                n,
                "{}",
                p.display()
            );
        }
        assert!(
            d.join(format!(
                "sub-{sub}/eeg/sub-{sub}_task-rest_desc-hermite.json"
            ))
            .is_file()
        );
    }
    assert!(
        d.join("sub-02/eeg/sub-02_task-oddball_desc-bandpower.csv")
            .is_file()
    );
    let cleaned = d.join("sub-03/eeg/sub-03_task-rest_desc-deblinked_eeg.edf");
    let rec = ede::recording::Recording::open(&cleaned, &Default::default()).unwrap();
    assert_eq!(rec.signals.len(), 11);
    assert!(
        d.join("sub-03/eeg/sub-03_task-rest_desc-deblink.json")
            .is_file()
    );
    assert!(
        !d.join("sub-01/eeg/sub-01_task-rest_desc-deblink.json")
            .exists()
    );

    // Filters that keep nothing are an error, not an empty success.
    let out = common::ede(&["xapen", r, "--subject", "99"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run"));
}
