//! Shared test helpers: where the shared recordings are, and small writers for round trips.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

pub mod ui;

/// A JSON array of numbers.
pub fn floats(v: &serde_json::Value) -> Vec<f64> {
    (v.as_array().expect("an array").iter())
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

/// `../shared/data` (or `$EDE_DATA`), or `None` with a note when it is absent.
/// Channel labels as MNE reads them from EDF (trailing dots dropped: "Fp1." is "Fp1").
pub fn mne_labels(labels: &[String]) -> Vec<&str> {
    labels.iter().map(|l| l.trim_end_matches('.')).collect()
}

pub fn shared_data() -> Option<PathBuf> {
    let dir = std::env::var_os("EDE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "note: {} is absent; tests on shared recordings are skipped",
            dir.display()
        );
        None
    }
}

/// Copies folder `from` to `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Runs the `ede` binary with `args` (on Vulkan, lavapipe where there is no GPU).
pub fn ede(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ede"))
        .args(args)
        .env("WGPU_BACKEND", "vulkan")
        .output()
        .unwrap()
}

pub struct TestSignal {
    pub label: &'static str,
    pub samples_per_record: usize,
    pub digital: Vec<i32>,
    pub physical_min: f64,
    pub physical_max: f64,
    pub digital_min: i32,
    pub digital_max: i32,
}

/// Writes an EDF/BDF file. `onsets` (EDF+D) gives each record's onset and adds an annotation
/// signal; `plus` marks EDF+C/BDF+C (an annotation signal with time-keeping TALs).
pub fn write_edf(
    path: &Path,
    bdf: bool,
    plus: Option<char>,
    record_duration: f64,
    signals: &[TestSignal],
    onsets: Option<&[f64]>,
    annotations: &[(f64, &str)],
) {
    let records = signals[0].digital.len() / signals[0].samples_per_record;
    // Each annotation goes into the TAL of the record holding its onset (as writers do).
    let records_f = records.max(1);
    let record_of = |t: f64| ((t / record_duration).floor().max(0.0) as usize).min(records_f - 1);
    let tal_bytes = |r: usize| {
        let mut n = 0;
        for (t, text) in annotations {
            if record_of(*t) == r {
                n += format!("+{t}\x14{text}\x14\0").len();
            }
        }
        n
    };
    let ann_bytes = 120usize.max((0..records_f).map(|r| 40 + tal_bytes(r)).max().unwrap_or(0));
    let bps = if bdf { 3 } else { 2 };
    let ann_spr = ann_bytes.div_ceil(bps);
    let ns = signals.len() + usize::from(plus.is_some());
    let mut h = Vec::new();
    fn put_in(h: &mut Vec<u8>, s: &str, w: usize) {
        let mut b = s.as_bytes().to_vec();
        b.resize(w, b' ');
        h.extend_from_slice(&b[..w]);
    }
    if bdf {
        h.push(0xFF);
        h.extend_from_slice(b"BIOSEMI");
    } else {
        put_in(&mut h, "0", 8);
    }
    put_in(&mut h, "X X X X", 80);
    put_in(&mut h, "Startdate 01-JAN-2020 X X X", 80);
    put_in(&mut h, "01.01.20", 8);
    put_in(&mut h, "10.00.00", 8);
    put_in(&mut h, &(256 * (ns + 1)).to_string(), 8);
    let reserved = match (plus, bdf) {
        (Some(c), false) => format!("EDF+{c}"),
        (Some(c), true) => format!("BDF+{c}"),
        (None, true) => "24BIT".into(),
        (None, false) => String::new(),
    };
    put_in(&mut h, &reserved, 44);
    put_in(&mut h, &records.to_string(), 8);
    put_in(&mut h, &record_duration.to_string(), 8);
    put_in(&mut h, &ns.to_string(), 4);
    let ann_label = if bdf {
        "BDF Annotations"
    } else {
        "EDF Annotations"
    };
    let labels: Vec<String> = signals
        .iter()
        .map(|s| s.label.to_string())
        .chain(plus.map(|_| ann_label.to_string()))
        .collect();
    for l in &labels {
        put_in(&mut h, l, 16);
    }
    for _ in 0..ns {
        put_in(&mut h, "AgAgCl electrode", 80);
    }
    for _ in signals {
        put_in(&mut h, "uV", 8);
    }
    if plus.is_some() {
        put_in(&mut h, "", 8);
    }
    let (dmin, dmax) = if bdf {
        (-8388608, 8388607)
    } else {
        (-32768, 32767)
    };
    for s in signals {
        put_in(&mut h, &s.physical_min.to_string(), 8);
    }
    if plus.is_some() {
        put_in(&mut h, "-1", 8);
    }
    for s in signals {
        put_in(&mut h, &s.physical_max.to_string(), 8);
    }
    if plus.is_some() {
        put_in(&mut h, "1", 8);
    }
    for s in signals {
        put_in(&mut h, &s.digital_min.to_string(), 8);
    }
    if plus.is_some() {
        put_in(&mut h, &dmin.to_string(), 8);
    }
    for s in signals {
        put_in(&mut h, &s.digital_max.to_string(), 8);
    }
    if plus.is_some() {
        put_in(&mut h, &dmax.to_string(), 8);
    }
    for _ in 0..ns {
        put_in(&mut h, "HP:0.1Hz", 80);
    }
    for s in signals {
        put_in(&mut h, &s.samples_per_record.to_string(), 8);
    }
    if plus.is_some() {
        put_in(&mut h, &ann_spr.to_string(), 8);
    }
    for _ in 0..ns {
        put_in(&mut h, "", 32);
    }
    let mut data = h;
    for r in 0..records {
        for s in signals {
            for &d in &s.digital[r * s.samples_per_record..(r + 1) * s.samples_per_record] {
                let b = d.to_le_bytes();
                data.extend_from_slice(&b[..bps]);
            }
        }
        if plus.is_some() {
            let onset = onsets.map(|o| o[r]).unwrap_or(r as f64 * record_duration);
            let mut tal = format!("+{onset}\x14\x14\0").into_bytes();
            for (t, text) in annotations {
                if record_of(*t) == r {
                    tal.extend(format!("+{t}\x14{text}\x14\0").as_bytes());
                }
            }
            tal.resize(ann_spr * bps, 0);
            data.extend_from_slice(&tal);
        }
    }
    std::fs::write(path, data).unwrap();
}

/// Two signals of `records` one-second records at 100 Hz: a ramp and a sine, in digital units.
pub fn two_signals(records: usize, bdf: bool) -> Vec<TestSignal> {
    let n = records * 100;
    let (dmin, dmax) = if bdf {
        (-8388608, 8388607)
    } else {
        (-32768, 32767)
    };
    vec![
        TestSignal {
            label: "Fp1",
            samples_per_record: 100,
            digital: (0..n).map(|i| (i as i32 * 37) % 20000 - 10000).collect(),
            physical_min: -500.0,
            physical_max: 500.0,
            digital_min: dmin,
            digital_max: dmax,
        },
        TestSignal {
            label: "ECG",
            samples_per_record: 100,
            digital: (0..n)
                .map(|i| ((i as f64 * 0.1).sin() * 30000.0) as i32)
                .collect(),
            physical_min: -3.2,
            physical_max: 3.2,
            digital_min: dmin,
            digital_max: dmax,
        },
    ]
}

/// The physical value a reader must produce for a digital value.
pub fn physical(s: &TestSignal, d: i32) -> f32 {
    let gain = (s.physical_max - s.physical_min) / (s.digital_max - s.digital_min) as f64;
    ((d - s.digital_min) as f64 * gain + s.physical_min) as f32
}

/// A xorshift generator: the same numbers on every machine.
pub struct Rng(pub u64);

impl Rng {
    /// Uniform in [0, 1).
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub fn gauss(&mut self) -> f64 {
        let (a, b) = (self.next().max(1e-300), self.next());
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }
}

/// The channels of `clean_eeg`: 19 EEG sites of the 10-20 system and an EOG channel.
pub const EEG_LABELS: [&str; 20] = [
    "Fp1", "Fp2", "F7", "F3", "Fz", "F4", "F8", "T3", "C3", "Cz", "C4", "T4", "T5", "P3", "Pz",
    "P4", "T6", "O1", "O2", "EOG1",
];
pub const EEG_FS: usize = 128;

/// 60 s of synthetic EEG at 128 Hz without blinks: six independent sources (three
/// low-pass noises, a waxing and waning 10 Hz alpha, 6 Hz theta, a 20 Hz beta) mixed with
/// random weights, plus 1 uV of sensor noise; physical range +-500 uV.
#[allow(clippy::needless_range_loop)]
pub fn clean_eeg(path: &Path, bdf: bool, seconds: usize) {
    let mut rng = Rng(42);
    let n = EEG_FS * seconds;
    let mut sources = vec![vec![0.0f64; n]; 6];
    for s in sources.iter_mut().take(3) {
        let mut v = 0.0;
        for x in s.iter_mut() {
            v = 0.9 * v + rng.gauss();
            *x = v * 2.0;
        }
    }
    for k in 0..n {
        let t = k as f64 / EEG_FS as f64;
        let tau = std::f64::consts::TAU;
        sources[3][k] = 8.0 * (1.0 + (tau * 0.1 * t).sin()) * (tau * 10.0 * t).sin();
        sources[4][k] = 5.0 * (tau * 6.0 * t + 0.3).sin();
        sources[5][k] = 3.0 * (tau * 20.0 * t).sin() * (tau * 0.37 * t).cos();
    }
    let (dmin, dmax) = if bdf {
        (-8388608, 8388607)
    } else {
        (-32768, 32767)
    };
    let signals: Vec<TestSignal> = EEG_LABELS
        .iter()
        .map(|&label| {
            let w: Vec<f64> = (0..6).map(|_| rng.next() * 2.0 - 0.5).collect();
            let digital = (0..n)
                .map(|k| {
                    let v: f64 = (0..6).map(|j| w[j] * sources[j][k]).sum::<f64>() + rng.gauss();
                    ((v + 500.0) / 1000.0 * (dmax - dmin) as f64 + dmin as f64).round() as i32
                })
                .collect();
            TestSignal {
                label,
                samples_per_record: EEG_FS,
                digital,
                physical_min: -500.0,
                physical_max: 500.0,
                digital_min: dmin,
                digital_max: dmax,
            }
        })
        .collect();
    write_edf(path, bdf, Some('C'), 1.0, &signals, None, &[(3.0, "start")]);
}

/// A xorshift generator: the mutation tests' repeatable randomness.
pub fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut state = seed;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    }
}

/// Opens `path`: an error is fine (a mutated file may be anything), a panic is not, and what
/// opens must decode every sample (signals short enough to read whole).
pub fn decodes_if_it_opens(path: &Path, options: &ede::recording::OpenOptions) {
    if let Ok(rec) = ede::recording::Recording::open(path, options) {
        for i in 0..rec.signals.len() {
            if rec.signals[i].samples < 10_000_000 {
                rec.read_all(i).unwrap();
            }
        }
    }
}
