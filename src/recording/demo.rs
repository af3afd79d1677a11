//! The built-in demo: a deterministic synthetic 10-20 EEG (19 channels, 256 Hz, 2 minutes) with
//! pink background activity, a posterior alpha rhythm that rises with the eyes closed, frontal
//! theta and central beta, 50 Hz mains hum, eye blinks on the frontal channels at irregular
//! times while the eyes are open, a small cardiac artifact, and one ECG channel.
//!
//! The generator is a fixed-seed SplitMix64, so every run (and every test) sees the same data.
//! A small hand-written generator keeps the output identical across `rand` versions.

use super::{Annotation, Format, Recording};

pub const FS: f64 = 256.0;
pub const DURATION_S: f64 = 120.0;
pub const EEG_LABELS: [&str; 19] = [
    "Fp1", "Fp2", "F7", "F3", "Fz", "F4", "F8", "T3", "C3", "Cz", "C4", "T4", "T5", "P3", "Pz",
    "P4", "T6", "O1", "O2",
];

/// Eyes-closed periods (start, end) in seconds.
const EYES_CLOSED: [(f64, f64); 2] = [(20.0, 40.0), (70.0, 90.0)];

pub(crate) struct SplitMix(pub u64);

impl SplitMix {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn gauss(&mut self) -> f64 {
        let u1 = self.uniform().max(1e-300);
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// Per-channel weights: (alpha, frontal blink, theta, beta, cardiac artifact).
fn weights(label: &str) -> (f64, f64, f64, f64, f64) {
    match label {
        "Fp1" | "Fp2" => (3.0, 1.0, 4.0, 2.0, 0.0),
        "F7" | "F8" => (4.0, 0.45, 4.0, 3.0, 0.5),
        "F3" | "F4" => (5.0, 0.4, 5.0, 3.5, 0.0),
        "Fz" => (5.0, 0.38, 6.0, 3.5, 0.0),
        "T3" | "T4" => (8.0, 0.08, 3.0, 2.5, 1.0),
        "C3" | "C4" | "Cz" => (9.0, 0.12, 4.0, 4.0, 0.0),
        "T5" | "T6" => (16.0, 0.03, 2.5, 2.0, 0.8),
        "P3" | "P4" | "Pz" => (22.0, 0.04, 3.0, 2.5, 0.0),
        "O1" | "O2" => (32.0, 0.02, 2.0, 2.0, 0.0),
        _ => (5.0, 0.0, 3.0, 2.0, 0.0),
    }
}

fn eyes_closed(t: f64) -> bool {
    EYES_CLOSED.iter().any(|&(a, b)| t >= a && t < b)
}

/// A beat of a lead-II-like ECG (mV) at time `x` seconds from the R peak.
fn ecg_beat(x: f64) -> f64 {
    let g = |mu: f64, sigma: f64, a: f64| a * (-((x - mu) / sigma).powi(2) / 2.0).exp();
    g(-0.2, 0.025, 0.15)
        + g(-0.03, 0.01, -0.12)
        + g(0.0, 0.012, 1.2)
        + g(0.03, 0.012, -0.28)
        + g(0.25, 0.045, 0.32)
}

/// Builds the demo recording.
pub fn demo_recording() -> Recording {
    let n = (FS * DURATION_S) as usize;
    let mut rng = SplitMix(0x0EDE_2026);
    let t = |i: usize| i as f64 / FS;

    // Beat times: about 72 bpm with slow respiratory and random variability.
    let mut beats = Vec::new();
    let mut tb = 0.4;
    while tb < DURATION_S + 1.0 {
        beats.push(tb);
        tb += 0.83 + 0.04 * (2.0 * std::f64::consts::PI * tb / 4.5).sin() + 0.02 * rng.gauss();
    }
    // Blinks at irregular intervals while the eyes are open.
    let mut blinks = Vec::new();
    let mut tk = 1.7;
    while tk < DURATION_S - 1.0 {
        if !eyes_closed(tk) && !eyes_closed(tk + 0.5) {
            blinks.push(tk);
        }
        tk += 2.0 + 5.0 * rng.uniform();
    }
    let ecg: Vec<f64> = (0..n)
        .map(|i| {
            let x = t(i);
            beats.iter().map(|&b| ecg_beat(x - b)).sum::<f64>()
        })
        .collect();
    let blink_wave: Vec<f64> = (0..n)
        .map(|i| {
            let x = t(i);
            blinks
                .iter()
                .map(|&b| {
                    // Fast rise, slower fall: a skewed bump of about 300 ms.
                    let d = x - b;
                    let s = if d < 0.0 { 0.06 } else { 0.11 };
                    160.0 * (-(d / s).powi(2) / 2.0).exp()
                })
                .sum()
        })
        .collect();
    // Alpha amplitude: waxing and waning, stronger with eyes closed (smoothed transitions).
    let alpha_env: Vec<f64> = (0..n)
        .map(|i| {
            let x = t(i);
            let closed = EYES_CLOSED
                .iter()
                .map(|&(a, b)| {
                    let s = |v: f64| 1.0 / (1.0 + (-v / 0.3).exp());
                    s(x - a) * s(b - x)
                })
                .sum::<f64>();
            (0.3 + 0.7 * closed) * (0.75 + 0.25 * (2.0 * std::f64::consts::PI * x / 3.1).sin())
        })
        .collect();
    // A shared pink component gives neighbouring channels their correlation.
    let shared = pink_noise(&mut rng, n, 6.0);
    let alpha_phase_drift = 2.0 * std::f64::consts::PI * rng.uniform();

    let mut data = Vec::with_capacity(EEG_LABELS.len() + 1);
    for (c, label) in EEG_LABELS.iter().enumerate() {
        let (wa, wb, wt, wbeta, wecg) = weights(label);
        let own = pink_noise(&mut rng, n, 9.0);
        let side = if label.ends_with('1')
            || label.ends_with('3')
            || label.ends_with('5')
            || label.ends_with('7')
        {
            -1.0
        } else {
            1.0
        };
        let phase = 0.3 * c as f64 + alpha_phase_drift;
        let f_alpha = 10.0 + 0.15 * side;
        let series = (0..n)
            .map(|i| {
                let x = t(i);
                let w = 2.0 * std::f64::consts::PI * x;
                let alpha = wa * alpha_env[i] * (w * f_alpha + phase).sin();
                let theta = wt * (w * 6.0 + 0.7 * c as f64).sin() * (0.6 + 0.4 * (w / 7.0).sin());
                let beta = wbeta * 0.5 * (w * 21.0 + c as f64).sin();
                let mains = 1.5 * (w * 50.0 + 0.1 * c as f64).sin();
                let cardiac = wecg * 4.0 * side * ecg[i];
                (own[i]
                    + 0.6 * shared[i]
                    + alpha
                    + theta
                    + beta
                    + mains
                    + wb * blink_wave[i]
                    + cardiac) as f32
            })
            .collect::<Vec<f32>>();
        data.push(series);
    }
    let ecg_noise = pink_noise(&mut rng, n, 0.02);
    data.push(
        ecg.iter()
            .zip(&ecg_noise)
            .enumerate()
            .map(|(i, (v, e))| {
                (v + e + 0.05 * (2.0 * std::f64::consts::PI * t(i) / 4.5).sin()) as f32
            })
            .collect(),
    );

    let mut labels: Vec<(String, String, f64)> = EEG_LABELS
        .iter()
        .map(|l| (l.to_string(), "uV".to_string(), FS))
        .collect();
    labels.push(("ECG".to_string(), "mV".to_string(), FS));

    let mut annotations = Vec::new();
    for &(a, b) in &EYES_CLOSED {
        annotations.push(Annotation {
            onset: a,
            duration: b - a,
            text: "Eyes closed".into(),
        });
        annotations.push(Annotation {
            onset: b,
            duration: 0.0,
            text: "Eyes open".into(),
        });
    }
    for &b in &blinks {
        annotations.push(Annotation {
            onset: b - 0.15,
            duration: 0.4,
            text: "Blink".into(),
        });
    }
    annotations.sort_by(|a, b| a.onset.total_cmp(&b.onset));
    let start = chrono::NaiveDate::from_ymd_opt(2026, 1, 5)
        .and_then(|d| d.and_hms_opt(9, 30, 0))
        .expect("valid constant date");
    super::in_memory(
        None,
        Format::Demo,
        start,
        labels,
        data,
        annotations,
        Vec::new(),
    )
}

/// Approximately 1/f noise with standard deviation `sd`: the sum of first-order low-passed
/// white noises with octave-spaced corners (each stage scaled to unit variance).
pub(crate) fn pink_noise(rng: &mut SplitMix, n: usize, sd: f64) -> Vec<f64> {
    const POLES: [f64; 5] = [0.998, 0.99, 0.96, 0.85, 0.5];
    let mut state = [0.0; POLES.len()];
    let gains = POLES.map(|p: f64| (1.0 - p * p).sqrt());
    let norm = sd / (POLES.len() as f64).sqrt();
    (0..n)
        .map(|_| {
            let mut v = 0.0;
            for k in 0..POLES.len() {
                state[k] = POLES[k] * state[k] + rng.gauss();
                v += state[k] * gains[k];
            }
            v * norm
        })
        .collect()
}
