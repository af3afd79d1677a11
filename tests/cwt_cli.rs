//! `ede cwt` as a researcher runs it: a channel's scalogram as JSON (checked against the CPU
//! path), band power of every channel as CSV, and a bad file among good ones.

mod common;

use common::{TestSignal, ede, write_edf};
use ede::dsp::cwt::{CwtPlan, cone_of_influence};

fn tone_signals() -> Vec<TestSignal> {
    // 100 Hz, 20 s: Fz carries 10 Hz, Oz 25 Hz.
    [("Fz", 10.0), ("Oz", 25.0)]
        .iter()
        .map(|&(label, f)| TestSignal {
            label,
            samples_per_record: 100,
            digital: (0..2000)
                .map(|i| {
                    ((2.0 * std::f64::consts::PI * f * i as f64 / 100.0).sin() * 20000.0) as i32
                })
                .collect(),
            physical_min: -500.0,
            physical_max: 500.0,
            digital_min: -32768,
            digital_max: 32767,
        })
        .collect()
}

#[test]
fn scalogram_json_has_the_issue_fields_and_the_cpu_values() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tones.edf");
    write_edf(&file, false, None, 1.0, &tone_signals(), None, &[]);
    let out = dir.path().join("fz.json");
    let o = ede(&[
        "cwt",
        file.to_str().unwrap(),
        "--channel",
        "Fz",
        "--start",
        "2",
        "--duration",
        "10",
        "--fmin",
        "2",
        "--fmax",
        "40",
        "--voices",
        "8",
        "--backend",
        "cpu",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    for key in [
        "file",
        "channel",
        "fs",
        "start_s",
        "n",
        "omega0",
        "scales",
        "frequencies_hz",
        "coi_s",
        "magnitude",
    ] {
        assert!(j.get(key).is_some(), "{key} is missing");
    }
    assert_eq!(j["n"], 1000);
    assert_eq!(j["start_s"], 2.0);
    let scales: Vec<f64> = serde_json::from_value(j["scales"].clone()).unwrap();
    assert_eq!(scales.len(), 36);
    let mag: Vec<Vec<f32>> = serde_json::from_value(j["magnitude"].clone()).unwrap();
    assert_eq!((mag.len(), mag[0].len()), (36, 1000));
    let coi: Vec<f64> = serde_json::from_value(j["coi_s"].clone()).unwrap();
    let want_coi = cone_of_influence(1000, 0.01, 6.0);
    assert!(
        coi.iter()
            .zip(&want_coi)
            .all(|(a, b)| (a - b).abs() < 1e-12)
    );
    // The values are the CPU path's on the same samples.
    let rec = ede::recording::Recording::open(&file, &Default::default()).unwrap();
    let mut x = vec![0f32; 1000];
    rec.read(0, 200, &mut x).unwrap();
    let want = CwtPlan::new(1000, 0.01, &scales, 6.0)
        .unwrap()
        .magnitude(&x);
    let got: Vec<f32> = mag.concat();
    let worst = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    assert!(worst < 1e-3, "{worst}");
    // The 10 Hz tone peaks at the scale nearest 10 Hz mid-stretch.
    let f: Vec<f64> = serde_json::from_value(j["frequencies_hz"].clone()).unwrap();
    let peak = (0..36)
        .max_by(|&a, &b| mag[a][500].total_cmp(&mag[b][500]))
        .unwrap();
    assert!((f[peak] / 10.0).log2().abs() <= 1.0 / 8.0, "{} Hz", f[peak]);
}

#[test]
fn band_power_of_every_channel_and_a_bad_file_among_good_ones() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("tones.edf");
    write_edf(&good, false, None, 1.0, &tone_signals(), None, &[]);
    let bad = dir.path().join("broken.edf");
    std::fs::write(&bad, b"0       not an EDF header").unwrap();
    let out = dir.path().join("power");
    let o = ede(&[
        "cwt",
        bad.to_str().unwrap(),
        good.to_str().unwrap(),
        "--all-channels",
        "--band-power",
        out.to_str().unwrap(),
        "--fmin",
        "4",
        "--fmax",
        "40",
        "--voices",
        "4",
        "--backend",
        "cpu",
    ]);
    assert!(
        !o.status.success(),
        "a bad file makes the exit code non-zero"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("broken.edf") && err.contains("1 of 2"),
        "{err}"
    );
    let csv = std::fs::read_to_string(out.join("tones.band-power.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("channel,start_s,40.0000Hz"),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines.len(),
        1 + 2 * 20,
        "two channels x 20 one-second blocks"
    );
    // Mid-recording, Fz's power peaks near 10 Hz and Oz's near 25 Hz.
    let header: Vec<f64> = lines[0]
        .split(',')
        .skip(2)
        .map(|h| h.trim_end_matches("Hz").parse().unwrap())
        .collect();
    for (row, want) in [(lines[21], 10.0), (lines[22], 25.0)] {
        let v: Vec<f64> = row.split(',').skip(2).map(|x| x.parse().unwrap()).collect();
        let peak = (0..v.len()).max_by(|&a, &b| v[a].total_cmp(&v[b])).unwrap();
        assert!(
            (header[peak] / want).log2().abs() <= 0.25,
            "{row}: peak {} Hz",
            header[peak]
        );
    }
    assert!(!out.join("broken.band-power.csv").exists());
    assert!(
        std::fs::read_dir(&out).unwrap().all(|e| !e
            .unwrap()
            .path()
            .to_string_lossy()
            .ends_with("partial"))
    );
}

#[test]
fn parameters_out_of_range_are_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tones.edf");
    write_edf(&file, false, None, 1.0, &tone_signals(), None, &[]);
    for (args, says) in [
        (vec!["--fmax", "80"], "Nyquist"),
        (vec!["--omega0", "0.5"], "omega0"),
        (vec!["--duration", "100"], "asked for"),
        (vec!["--channel", "Cz"], "no channel"),
    ] {
        let mut all = vec!["cwt", file.to_str().unwrap()];
        if !args.contains(&"--channel") {
            all.extend(["--channel", "Fz"]);
        }
        all.extend(args.iter().copied());
        all.extend(["--backend", "cpu"]);
        let o = ede(&all);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{args:?}: {err}");
    }
}
