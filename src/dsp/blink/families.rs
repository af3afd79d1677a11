//! Families of simulated blinks that the removal was not designed on (issue 43): pulse shapes,
//! topographies and timings other than `simulate`'s raised cosine on the distance model, each
//! one a documented recipe with its seed. What a family adds is a sum of events, each a pulse
//! in time times a fixed value per channel; `over-alpha` adds an alpha rhythm to the clean
//! signal besides (it is EEG, not blink: the score counts it as clean).
//!
//! - `gaussian-edges` (the recipe): blinks about every 4 s (exponential gaps, at least
//!   1.5 s); a pulse rising with a Gaussian edge of 80-120 ms and falling with one of
//!   200-300 ms (an edge of E: a Gaussian of SD E/3, from 1 % of the peak to the peak in E);
//!   amplitude 0.7-1.3 A at FPz; the fixed topography `table`.
//! - `raised-cosine`: `simulate`'s own blinks (200-400 ms raised cosines, 15 a minute) on
//!   `simulate::propagation`'s distance model: the family the detector was tuned on.
//! - `runs`: flurries of 2-4 short blinks (edges of 60-90 ms and 120-200 ms) 0.5-0.8 s
//!   apart, a flurry about every 8 s; `table`.
//! - `over-alpha`: `gaussian-edges`' blinks over bursts of 9-11 Hz alpha (2-6 s each, most of
//!   the time, 25 uV at the occipital sites, falling off towards the front).
//! - `undershoot`: a pulse with edges of 80-120 and 150-250 ms less a fifth of a Gaussian of
//!   SD 100 ms 0.3 s after its peak (the lid overshooting as it reopens), on an asymmetric
//!   topography: `table` with the left side
//!   1.25x, the right 0.8x, F7/F8 and the temporal sites raised, and every channel's factor
//!   scaled by a seeded 0.7-1.3.

use serde::{Deserialize, Serialize};

use super::simulate;
use crate::recording::demo::SplitMix;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    GaussianEdges,
    RaisedCosine,
    Runs,
    OverAlpha,
    Undershoot,
}

impl Family {
    pub const ALL: [Family; 5] = [
        Family::GaussianEdges,
        Family::RaisedCosine,
        Family::Runs,
        Family::OverAlpha,
        Family::Undershoot,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Family::GaussianEdges => "gaussian-edges",
            Family::RaisedCosine => "raised-cosine",
            Family::Runs => "runs",
            Family::OverAlpha => "over-alpha",
            Family::Undershoot => "undershoot",
        }
    }
}

/// A pulse's shape in time, its peak at 0 and height 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Pulse {
    /// Gaussian edges of SD `rise_s` before the peak and `fall_s` after.
    Gaussian { rise_s: f64, fall_s: f64 },
    /// `simulate::shape` of `duration_s` (peak at `simulate::RISE` of it).
    RaisedCosine { duration_s: f64 },
    /// `Gaussian` less `depth` times a Gaussian of SD `width_s` centred `delay_s` after the
    /// peak.
    Undershoot {
        rise_s: f64,
        fall_s: f64,
        depth: f64,
        width_s: f64,
        delay_s: f64,
    },
}

impl Pulse {
    /// The value `t` seconds after the peak.
    pub fn at(&self, t: f64) -> f64 {
        let edge = |t: f64, rise: f64, fall: f64| {
            let sd = if t < 0.0 { rise } else { fall };
            (-0.5 * (t / sd).powi(2)).exp()
        };
        match *self {
            Pulse::Gaussian { rise_s, fall_s } => edge(t, rise_s, fall_s),
            Pulse::RaisedCosine { duration_s } => {
                simulate::shape(t + simulate::RISE * duration_s, duration_s)
            }
            Pulse::Undershoot {
                rise_s,
                fall_s,
                depth,
                width_s,
                delay_s,
            } => edge(t, rise_s, fall_s) - depth * (-0.5 * ((t - delay_s) / width_s).powi(2)).exp(),
        }
    }

    /// Seconds before and after the peak beyond which the pulse is below 1e-4.
    pub fn reach(&self) -> (f64, f64) {
        const SDS: f64 = 4.3;
        match *self {
            Pulse::Gaussian { rise_s, fall_s } => (SDS * rise_s, SDS * fall_s),
            Pulse::RaisedCosine { duration_s } => (
                simulate::RISE * duration_s,
                (1.0 - simulate::RISE) * duration_s,
            ),
            Pulse::Undershoot {
                rise_s,
                fall_s,
                width_s,
                delay_s,
                ..
            } => (SDS * rise_s, (SDS * fall_s).max(delay_s + SDS * width_s)),
        }
    }
}

/// One simulated blink: its peak, its height at a factor of 1 (microvolts) and its shape.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub peak_s: f64,
    pub amplitude_uv: f64,
    pub pulse: Pulse,
}

/// A family's draw over a recording: its blinks, each channel's factor, and the alpha it adds
/// to the clean signal (if any).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Draw {
    pub family: Family,
    pub seed: u64,
    pub amplitude_uv: f64,
    pub events: Vec<Event>,
    /// Per channel (in the order of the labels given), the blink's factor.
    pub factors: Vec<f64>,
    /// Alpha bursts: (start s, end s, frequency Hz); the rhythm's factor per channel is
    /// `alpha_factor`.
    pub alpha: Vec<(f64, f64, f64)>,
}

/// Occipital alpha's peak amplitude in `over-alpha`, microvolts.
pub const ALPHA_UV: f64 = 25.0;

/// The fixed topography of the recipe: EOG 1.3, FPz (and Fp1/Fp2/AF) 1, Fz 0.5, F3/F4
/// 0.45 (other F sites 0.4), FC1/FC2 0.3, other FC 0.25, Cz 0.17, other C 0.15, T 0.1, every
/// other channel 0.04.
pub fn table(label: &str, is_eog: bool) -> f64 {
    if is_eog {
        return 1.3;
    }
    let l = label.trim().to_ascii_uppercase();
    let site = |prefix: &str| {
        l.starts_with(prefix)
            && l[prefix.len()..]
                .chars()
                .all(|c| c.is_ascii_digit() || c == 'Z')
    };
    match l.as_str() {
        "FZ" => 0.5,
        "F3" | "F4" => 0.45,
        "FC1" | "FC2" | "FCZ" => 0.3,
        "CZ" => 0.17,
        _ if site("FP") || site("AF") => 1.0,
        _ if site("FC") => 0.25,
        _ if site("F") => 0.4,
        _ if site("C") => 0.15,
        _ if site("T") || site("FT") => 0.1,
        _ => 0.04,
    }
}

/// `undershoot`'s topography: `table` made asymmetric and uneven (see the module's notes).
fn asymmetric(label: &str, is_eog: bool, rng: &mut SplitMix) -> f64 {
    let l = label.trim().to_ascii_uppercase();
    let number = l.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let side = match number.parse::<u32>() {
        Ok(n) if n % 2 == 1 => 1.25,
        Ok(_) => 0.8,
        Err(_) => 1.0,
    };
    let raised = match l.as_str() {
        "F7" | "F8" => 0.6,
        "T7" | "T8" | "T3" | "T4" | "FT7" | "FT8" => 0.2,
        _ => table(label, is_eog),
    };
    let jitter = 0.7 + 0.6 * rng.uniform();
    if is_eog {
        raised * jitter
    } else {
        raised * side * jitter
    }
}

/// The alpha rhythm's factor on a channel: occipital 1, parieto-occipital 0.9, parietal 0.8,
/// centro-parietal 0.6, central and temporal 0.4, fronto-central 0.3, frontal 0.2,
/// frontopolar 0.15, EOG 0.1.
pub fn alpha_factor(label: &str, is_eog: bool) -> f64 {
    if is_eog {
        return 0.1;
    }
    let l = label.trim().to_ascii_uppercase();
    let starts = |p: &str| l.starts_with(p);
    match () {
        _ if starts("PO") => 0.9,
        _ if starts("O") || starts("I") => 1.0,
        _ if starts("CP") || starts("TP") => 0.6,
        _ if starts("P") => 0.8,
        _ if starts("FC") || starts("FT") => 0.3,
        _ if starts("FP") || starts("AF") => 0.15,
        _ if starts("F") => 0.2,
        _ => 0.4,
    }
}

/// Renewal times over `(from, to)` seconds: exponential gaps of `mean` s, at least `least`.
fn renewal(rng: &mut SplitMix, (from, to): (f64, f64), mean: f64, least: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut t = from;
    loop {
        t += (-(1.0 - rng.uniform()).ln() * mean).max(least);
        if t >= to {
            return out;
        }
        out.push(t);
    }
}

fn between(rng: &mut SplitMix, (lo, hi): (f64, f64)) -> f64 {
    lo + (hi - lo) * rng.uniform()
}

/// The draw of `family` at `amplitude_uv` with `seed` over `length_s` seconds, for channels
/// `labels` (`eog` marks the EOG ones). Blinks keep 1.5 s from both ends.
pub fn draw(
    family: Family,
    amplitude_uv: f64,
    seed: u64,
    length_s: f64,
    labels: &[String],
    eog: &[bool],
) -> Draw {
    let mut rng = SplitMix(seed.wrapping_mul(0x9E37_79B9) ^ (family as u64 + 1) << 40);
    let span = (1.5, length_s - 1.5);
    let amplitude = |rng: &mut SplitMix| amplitude_uv * between(rng, (0.7, 1.3));
    // An edge of E seconds is a Gaussian of SD E/3.
    let edges = |rng: &mut SplitMix, rise: (f64, f64), fall: (f64, f64)| {
        (between(rng, rise) / 3.0, between(rng, fall) / 3.0)
    };
    let gaussian = |rng: &mut SplitMix| {
        let (rise_s, fall_s) = edges(rng, (0.08, 0.12), (0.2, 0.3));
        Pulse::Gaussian { rise_s, fall_s }
    };
    let mut events = Vec::new();
    let mut alpha = Vec::new();
    match family {
        Family::GaussianEdges | Family::OverAlpha => {
            for t in renewal(&mut rng, span, 4.0, 1.5) {
                let pulse = gaussian(&mut rng);
                events.push(Event {
                    peak_s: t,
                    amplitude_uv: amplitude(&mut rng),
                    pulse,
                });
            }
        }
        Family::RaisedCosine => {
            for b in simulate::schedule(length_s - 1.0, 15.0, amplitude_uv, seed) {
                events.push(Event {
                    peak_s: b.peak_s + 1.0,
                    amplitude_uv: b.amplitude_uv,
                    pulse: Pulse::RaisedCosine {
                        duration_s: b.duration_s,
                    },
                });
            }
        }
        Family::Runs => {
            for start in renewal(&mut rng, (span.0, span.1 - 3.0), 8.0, 3.0) {
                let count = 2 + (rng.uniform() * 3.0) as usize;
                let mut t = start;
                for _ in 0..count {
                    let (rise_s, fall_s) = edges(&mut rng, (0.06, 0.09), (0.12, 0.2));
                    let pulse = Pulse::Gaussian { rise_s, fall_s };
                    events.push(Event {
                        peak_s: t,
                        amplitude_uv: amplitude(&mut rng),
                        pulse,
                    });
                    t += between(&mut rng, (0.5, 0.8));
                }
            }
        }
        Family::Undershoot => {
            for t in renewal(&mut rng, span, 4.0, 1.5) {
                let (rise_s, fall_s) = edges(&mut rng, (0.08, 0.12), (0.15, 0.25));
                let pulse = Pulse::Undershoot {
                    rise_s,
                    fall_s,
                    depth: 0.2,
                    width_s: 0.1,
                    delay_s: 0.3,
                };
                events.push(Event {
                    peak_s: t,
                    amplitude_uv: amplitude(&mut rng),
                    pulse,
                });
            }
        }
    }
    if family == Family::OverAlpha {
        let mut t = 0.0;
        while t < length_s {
            let len = between(&mut rng, (2.0, 6.0));
            alpha.push((t, (t + len).min(length_s), between(&mut rng, (9.0, 11.0))));
            t += len + between(&mut rng, (0.3, 2.0));
        }
    }
    let factors = (labels.iter().zip(eog))
        .map(|(l, &e)| match family {
            Family::RaisedCosine => match e {
                true => 1.0,
                false => simulate::propagation(l).unwrap_or(0.0),
            },
            Family::Undershoot => asymmetric(l, e, &mut rng),
            _ => table(l, e),
        })
        .collect();
    Draw {
        family,
        seed,
        amplitude_uv,
        events,
        factors,
        alpha,
    }
}

impl Draw {
    /// The blinks' waveform at factor 1 (microvolts) over `samples` at `fs`.
    pub fn waveform(&self, fs: f64, samples: usize) -> Vec<f64> {
        let mut w = vec![0.0; samples];
        for e in &self.events {
            let (before, after) = e.pulse.reach();
            let first = ((e.peak_s - before) * fs).ceil().max(0.0) as usize;
            let last = (((e.peak_s + after) * fs).floor() as usize).min(samples.saturating_sub(1));
            for (k, v) in w.iter_mut().enumerate().take(last + 1).skip(first) {
                *v += e.amplitude_uv * e.pulse.at(k as f64 / fs - e.peak_s);
            }
        }
        w
    }

    /// The alpha rhythm at factor 1 (microvolts) over `samples` at `fs`: each burst a sine
    /// under a Hann envelope of `ALPHA_UV`.
    pub fn alpha_waveform(&self, fs: f64, samples: usize) -> Vec<f64> {
        let mut w = vec![0.0; samples];
        for (k, &(from, to, hz)) in self.alpha.iter().enumerate() {
            let phase = k as f64 * 1.7;
            let first = (from * fs).ceil() as usize;
            let last = ((to * fs).floor() as usize).min(samples.saturating_sub(1));
            for (i, v) in w.iter_mut().enumerate().take(last + 1).skip(first) {
                let t = i as f64 / fs;
                let env = (std::f64::consts::PI * (t - from) / (to - from))
                    .sin()
                    .powi(2);
                *v += ALPHA_UV * env * (2.0 * std::f64::consts::PI * hz * t + phase).sin();
            }
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recipes_hold() {
        let labels: Vec<String> = [
            "FPz", "EOG1", "Fz", "F3", "FC1", "FC5", "Cz", "C3", "T7", "O1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let eog: Vec<bool> = labels.iter().map(|l| l == "EOG1").collect();
        let d = draw(Family::GaussianEdges, 100.0, 1, 600.0, &labels, &eog);
        assert_eq!(
            d.factors,
            vec![1.0, 1.3, 0.5, 0.45, 0.3, 0.25, 0.17, 0.15, 0.1, 0.04]
        );
        let gaps: Vec<f64> = d
            .events
            .windows(2)
            .map(|w| w[1].peak_s - w[0].peak_s)
            .collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        assert!(
            // Exponential gaps of 4 s, at least 1.5 s: 4.25 s on average, 0.35 s the SD of a
            // mean of ~150.
            gaps.iter().all(|&g| g >= 1.5 - 1e-9) && (3.2..5.3).contains(&mean),
            "{mean}"
        );
        assert!(
            d.events
                .iter()
                .all(|e| (70.0..=130.0).contains(&e.amplitude_uv))
        );
        let p = Pulse::Gaussian {
            rise_s: 0.1,
            fall_s: 0.25,
        };
        assert_eq!(p.at(0.0), 1.0);
        assert!((p.at(-0.1) - (-0.5f64).exp()).abs() < 1e-12);
        assert!((p.at(0.25) - (-0.5f64).exp()).abs() < 1e-12);
        let runs = draw(Family::Runs, 100.0, 2, 600.0, &labels, &eog);
        let close = runs
            .events
            .windows(2)
            .filter(|w| w[1].peak_s - w[0].peak_s < 0.81)
            .count();
        assert!(
            close * 2 > runs.events.len() / 2,
            "{close} of {}",
            runs.events.len()
        );
        let u = draw(Family::Undershoot, 100.0, 3, 600.0, &labels, &eog);
        assert!(u.factors[5] != 0.25 && u.factors[0] != 1.0);
        let a = draw(Family::OverAlpha, 100.0, 3, 60.0, &labels, &eog);
        let w = a.alpha_waveform(128.0, 60 * 128);
        let peak = w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(peak > 0.8 * ALPHA_UV && peak <= ALPHA_UV, "{peak}");
        assert_eq!(alpha_factor("O1", false), 1.0);
        assert_eq!(alpha_factor("FPz", false), 0.15);
    }
}
