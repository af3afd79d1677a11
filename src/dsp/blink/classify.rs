//! Telling blinks from the other eye events the blink band shows. A candidate on the
//! detection channels is a peak of their 1-8 Hz band; saccades and slow eye movements (a step
//! of the EOG level), eye closures (a plateau of a second or more) and blinks (a peak of
//! 0.1-0.4 s that returns to where it started) all give one. Removing a component over a
//! step or a plateau leaves a step or a spike of its own, so only blinks are removed unless
//! the user asks for more (`BlinkParams::remove_eye_movements`).
//!
//! The shape is judged on the detection reference (the sum of the polarity-corrected
//! detection channels, smoothed over 40 ms), not on its band: the band-pass turns a step
//! into a peak. The thresholds below were set on the EEGLAB sample's events (blinks: symmetry
//! 0.64-0.99, half-height width 0.06-0.14 s; saccade steps: symmetry under 0.4; the eye
//! closure at 207 s: 0.9 s wide) with a margin left as `Uncertain` between the classes.

use serde::{Deserialize, Serialize};

/// What a candidate is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventClass {
    Blink,
    /// A saccade or slow eye movement: the level after differs from the level before.
    EyeMovement,
    /// The eyes held closed (or a long slow deflection that returns): a plateau.
    EyeClosure,
    /// Between the classes, or too close to the data's edge to tell: left alone.
    Uncertain,
}

impl EventClass {
    pub fn name(self) -> &'static str {
        match self {
            EventClass::Blink => "blink",
            EventClass::EyeMovement => "eye movement",
            EventClass::EyeClosure => "eye closure",
            EventClass::Uncertain => "uncertain",
        }
    }
}

/// The shape of one event on the reference trace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// The reference's maximum near the candidate (samples).
    pub peak: usize,
    /// The smaller of the rise (peak over the level before) and the fall (peak over the level
    /// after) over the larger: 1 for a blink, near 0 or below for a step.
    pub symmetry: f32,
    /// Width at half the height over the mean level of both sides, seconds; `None` where the
    /// trace does not come down on one side within the data or 2 s.
    pub width_s: Option<f32>,
}

/// Below this symmetry an event is an eye movement; between it and `BLINK_SYMMETRY`, uncertain.
const STEP_SYMMETRY: f32 = 0.45;
const BLINK_SYMMETRY: f32 = 0.6;
/// Half-height widths (s): a blink is at most `BLINK_WIDTH_S` wide, longer events up to
/// `CLOSURE_WIDTH_S` are uncertain, longer ones are closures (or, asymmetric, movements).
const BLINK_WIDTH_S: f32 = 0.35;
const CLOSURE_WIDTH_S: f32 = 0.5;
/// A peak at most this wide (s) at half its height, between a step's symmetry and a blink's,
/// is a blink.
const SHARP_WIDTH_S: f32 = 0.2;
/// The levels either side of a blink: medians over these spans around its peak (s).
const BEFORE_S: (f64, f64) = (-0.6, -0.3);
const AFTER_S: (f64, f64) = (0.4, 0.7);
/// The same for a plateau, further out.
const LONG_BEFORE_S: (f64, f64) = (-1.5, -1.0);
const LONG_AFTER_S: (f64, f64) = (1.0, 1.5);
/// Less than this of a level's span within the data, and that side is unknown.
const MIN_SPAN_S: f64 = 0.1;

/// The reference trace smoothed by a 40 ms moving average (what `classify` reads).
pub fn smooth(x: &[f32], fs: f64) -> Vec<f32> {
    let k = ((0.04 * fs).round() as usize).max(1);
    let half = k / 2;
    let mut prefix = Vec::with_capacity(x.len() + 1);
    prefix.push(0.0f64);
    for &v in x {
        prefix.push(prefix.last().copied().unwrap_or(0.0) + v as f64);
    }
    (0..x.len())
        .map(|t| {
            let lo = t.saturating_sub(half);
            let hi = (t + k - half).min(x.len());
            ((prefix[hi] - prefix[lo]) / (hi - lo) as f64) as f32
        })
        .collect()
}

fn median_over(r: &[f32], peak: usize, fs: f64, (a, b): (f64, f64)) -> Option<f32> {
    let at = |s: f64| (peak as f64 + s * fs).round();
    let lo = at(a).max(0.0) as usize;
    let hi = (at(b).max(0.0) as usize).min(r.len());
    if hi <= lo || ((hi - lo) as f64) < MIN_SPAN_S * fs {
        return None;
    }
    let mut v = r[lo..hi].to_vec();
    let mid = v.len() / 2;
    Some(*v.select_nth_unstable_by(mid, f32::total_cmp).1)
}

fn symmetry(peak_value: f32, before: f32, after: f32) -> f32 {
    let (rise, fall) = (peak_value - before, peak_value - after);
    let big = rise.max(fall);
    if big <= 0.0 {
        return 0.0;
    }
    rise.min(fall) / big
}

/// The width (s) of the excursion of `r` around `peak` above `half`; `None` where it does not
/// come down on one side within the data or 2 s.
fn width_at(r: &[f32], peak: usize, half: f32, fs: f64) -> Option<f32> {
    let limit = (2.0 * fs) as usize;
    let left = (peak.saturating_sub(limit)..=peak)
        .rev()
        .find(|&t| r[t] <= half)?;
    let right = (peak..(peak + limit).min(r.len())).find(|&t| r[t] <= half)?;
    Some(((right - left) as f64 / fs) as f32)
}

/// The shape of the event whose band peaked at `at` on reference `r` (`smooth`ed), its peak
/// sought within `reach` samples; with the class it implies. A blink rises and falls by at
/// least `min_height` on the reference (less is uncertain: the candidate came from elsewhere).
pub fn classify(
    r: &[f32],
    at: usize,
    reach: usize,
    fs: f64,
    min_height: f32,
) -> (EventClass, Shape) {
    let lo = at.saturating_sub(reach);
    let hi = (at + reach + 1).min(r.len());
    let peak = (lo..hi)
        .max_by(|&a, &b| r[a].total_cmp(&r[b]))
        .unwrap_or(at);
    let top = r[peak];
    let before = median_over(r, peak, fs, BEFORE_S);
    let after = median_over(r, peak, fs, AFTER_S);
    let (before, after) = match (before, after) {
        (Some(b), Some(a)) => (b, a),
        // At an edge of the data one level is unknown: a blink is told by the other and by
        // coming back down within the data on both sides. What has not come down yet is left
        // alone (a stream's lookahead, `StreamParams::lookahead_s`, gives it the time).
        (Some(level), None) | (None, Some(level)) => {
            let width_s = width_at(r, peak, 0.5 * (top + level), fs);
            let class = match width_s {
                Some(w) if w <= BLINK_WIDTH_S && top - level >= min_height => EventClass::Blink,
                _ => EventClass::Uncertain,
            };
            let shape = Shape {
                peak,
                symmetry: f32::NAN,
                width_s,
            };
            return (class, shape);
        }
        (None, None) => {
            let shape = Shape {
                peak,
                symmetry: f32::NAN,
                width_s: None,
            };
            return (EventClass::Uncertain, shape);
        }
    };
    let width_s = width_at(r, peak, 0.5 * (top + 0.5 * (before + after)), fs);
    let shape = Shape {
        peak,
        symmetry: symmetry(top, before, after),
        width_s,
    };
    let class = match width_s {
        _ if shape.symmetry < STEP_SYMMETRY => {
            // A plateau longer than the near levels' reach looks like a step from inside;
            // its far levels tell a closure (both sides low) from a movement.
            let far = (median_over(r, peak, fs, LONG_BEFORE_S))
                .zip(median_over(r, peak, fs, LONG_AFTER_S))
                .map(|(b, a)| symmetry(top, b, a));
            match far {
                Some(s) if s >= BLINK_SYMMETRY && width_s.is_none_or(|w| w > CLOSURE_WIDTH_S) => {
                    EventClass::EyeClosure
                }
                _ => EventClass::EyeMovement,
            }
        }
        None => EventClass::Uncertain,
        Some(w) if w > CLOSURE_WIDTH_S => EventClass::EyeClosure,
        Some(w) if w > BLINK_WIDTH_S => EventClass::Uncertain,
        // Between a step and a blink by its levels: a sharp peak twice the least height is a
        // blink whose level moves under it (a blink during a saccade, the EEGLAB sample at
        // 73.2 s); smaller ones are not told from frontal waves (57.9 and 102.8 s there).
        Some(w)
            if shape.symmetry < BLINK_SYMMETRY
                && (w > SHARP_WIDTH_S || top - before.max(after) < 2.0 * min_height) =>
        {
            EventClass::Uncertain
        }
        Some(_) if top - before.max(after) < min_height => EventClass::Uncertain,
        Some(_) => EventClass::Blink,
    };
    (class, shape)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsp::blink::simulate::shape;

    const FS: f64 = 128.0;

    fn trace(f: impl Fn(f64) -> f64) -> Vec<f32> {
        (0..(6.0 * FS) as usize)
            .map(|i| f(i as f64 / FS) as f32)
            .collect()
    }

    #[test]
    fn blinks_steps_and_plateaus_are_told_apart() {
        let reach = (0.15 * FS) as usize;
        let at = (3.0 * FS) as usize;
        let blink = trace(|t| 150.0 * shape(t - 2.85, 0.3));
        assert_eq!(
            classify(&smooth(&blink, FS), at, reach, FS, 20.0).0,
            EventClass::Blink
        );
        // A saccade: the level steps by 80 uV and stays.
        let step = trace(|t| if t > 3.0 { 80.0 } else { 0.0 });
        assert_eq!(
            classify(&smooth(&step, FS), at, reach, FS, 20.0).0,
            EventClass::EyeMovement
        );
        // Eyes closed for a second.
        let closure = trace(|t| if (2.5..3.5).contains(&t) { 200.0 } else { 0.0 });
        assert_eq!(
            classify(&smooth(&closure, FS), at, reach, FS, 20.0).0,
            EventClass::EyeClosure
        );
        // At the end of the data, a blink that has come back down is still a blink; one
        // whose fall is not in yet is left alone, and so is a rise too slow for a blink.
        let late = trace(|t| 150.0 * shape(t - 5.6, 0.3));
        let at_end = (5.72 * FS) as usize;
        assert_eq!(
            classify(&smooth(&late, FS), at_end, reach, FS, 20.0).0,
            EventClass::Blink
        );
        let late = trace(|t| 150.0 * shape(t - 5.85, 0.3));
        let at_end = (5.97 * FS) as usize;
        assert_eq!(
            classify(&smooth(&late, FS), at_end, reach, FS, 20.0).0,
            EventClass::Uncertain
        );
        let slow = trace(|t| 150.0 * shape(t - 5.0, 2.0));
        assert_eq!(
            classify(&smooth(&slow, FS), (5.8 * FS) as usize, reach, FS, 20.0).0,
            EventClass::Uncertain
        );
    }
}
