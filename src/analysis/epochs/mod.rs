//! Epochs around events and their averages (ERPs), as MNE-Python's `Epochs` and `average`:
//! events chosen by their text (annotations, and trigger codes, which readers turn into
//! annotations), a window `tmin..tmax`, a baseline, rejection by peak-to-peak amplitude and
//! flatness per channel type, epochs overlapping a span marked bad dropped, bad channels left
//! out or interpolated (the recording's `interpolate_bads`). The traces are the page's: its
//! montage, reference and filters (`dsp::montage`), read once for all epochs; the arithmetic is
//! `dsp::epochs`. Values are in each channel's reading unit (voltages in uV).

pub mod evoked_fif;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::dsp::epochs::{self, Average, Limits, Verdict};
use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::{self, Derivation};
use crate::recording::channel::{reading_unit, si_per_unit};
use crate::recording::{Annotation, ChannelType, ReadError, Recording};

/// What to epoch and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpochParams {
    /// One condition per event text (an annotation's text without its channel, or a trigger
    /// code as the readers write it).
    pub events: Vec<String>,
    pub tmin: f64,
    pub tmax: f64,
    /// The baseline interval in seconds (`None` ends: the window's); `None`: no baseline.
    pub baseline: Option<(Option<f64>, Option<f64>)>,
    /// Peak-to-peak limits per channel type, in SI units (volts, teslas), as MNE's `reject`.
    pub reject: Vec<(ChannelType, f64)>,
    /// Smallest peak-to-peak per channel type, as MNE's `flat`.
    pub flat: Vec<(ChannelType, f64)>,
    /// Drop epochs that overlap a span whose text starts with "bad" (MNE's default).
    pub reject_by_annotation: bool,
}

impl Default for EpochParams {
    fn default() -> Self {
        EpochParams {
            events: Vec::new(),
            tmin: -0.2,
            tmax: 0.5,
            baseline: Some((None, Some(0.0))),
            reject: Vec::new(),
            flat: Vec::new(),
            reject_by_annotation: true,
        }
    }
}

/// Why epochs cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum EpochError {
    #[error("{0}")]
    Invalid(String),
    #[error("no event has the text {0:?} (events here: {1})")]
    NoSuchEvent(String, String),
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// An epoch left out, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dropped {
    /// Its place among its condition's events (from 0).
    pub index: usize,
    pub onset_s: f64,
    pub reason: String,
    /// The channels that dropped it (rejection and flatness).
    pub channels: Vec<String>,
}

/// One condition's epochs and average.
#[derive(Debug, Clone)]
pub struct Condition {
    pub name: String,
    /// Every event's onset and window.
    pub events: Vec<Placed>,
    /// Per event, whether its epoch is in the average.
    pub kept: Vec<bool>,
    pub dropped: Vec<Dropped>,
    pub average: Average,
}

/// Epochs of several conditions over the same traces.
#[derive(Clone)]
pub struct Epochs {
    pub fs: f64,
    /// The window's first and last sample offsets from the event.
    pub window: (i64, i64),
    pub labels: Vec<String>,
    pub units: Vec<String>,
    pub kinds: Vec<ChannelType>,
    /// The file's or the template's electrode positions, for scalp maps.
    pub positions: Vec<Option<[f64; 3]>>,
    /// Channels that are scalp electrodes (the GFP's).
    pub scalp: Vec<usize>,
    pub conditions: Vec<Condition>,
    /// The baseline's samples within the window.
    pub baseline: Option<(usize, usize)>,
    traces: Arc<Traces>,
}

impl Epochs {
    /// Samples per channel of an epoch.
    pub fn len(&self) -> usize {
        (self.window.1 - self.window.0 + 1) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The epoch's times in seconds from the event.
    pub fn times_s(&self) -> Vec<f64> {
        (self.window.0..=self.window.1)
            .map(|k| k as f64 / self.fs)
            .collect()
    }

    /// Condition `c`'s event `e` (kept or not), baseline-corrected, channel-major; `None`
    /// where its window is outside the data.
    pub fn epoch(&self, c: usize, e: usize) -> Option<Vec<f64>> {
        let start = self.conditions.get(c)?.events.get(e)?.1?;
        let n = self.len();
        let mut out = Vec::with_capacity(n * self.labels.len());
        for ch in 0..self.labels.len() {
            out.extend(self.traces.channel(start, ch, n)?.iter().map(|&v| v as f64));
        }
        epochs::subtract_baseline(&mut out, n, self.baseline);
        Some(out)
    }

    /// The channels a GFP spans: the scalp electrodes, else every channel.
    pub fn gfp_channels(&self) -> Vec<usize> {
        match self.scalp.len() >= 2 {
            true => self.scalp.clone(),
            false => (0..self.labels.len()).collect(),
        }
    }
}

/// One condition as `ede epochs` writes it.
#[derive(Debug, Serialize)]
pub struct ConditionReport {
    pub n_epochs: usize,
    pub dropped: Vec<Dropped>,
    /// Channel x time.
    pub data: Vec<Vec<f64>>,
    /// The standard deviation over epochs (ddof 1), channel x time.
    pub sd: Vec<Vec<f64>>,
}

/// The averages as `ede epochs` writes them (and the ERP tab exports).
#[derive(Debug, Serialize)]
pub struct EpochsReport {
    /// The unit every channel shares, or "mixed" (then `units` says each one's).
    pub unit: String,
    pub units: Vec<String>,
    pub fs: f64,
    pub times_s: Vec<f64>,
    pub channels: Vec<String>,
    pub baseline_s: Option<(Option<f64>, Option<f64>)>,
    pub filter: String,
    /// Per condition, in the order asked for.
    pub conditions: serde_json::Map<String, serde_json::Value>,
}

impl Epochs {
    /// The report of these epochs, made with `p` and filtered as `filter` says.
    pub fn report(&self, p: &EpochParams, filter: String) -> EpochsReport {
        let n = self.len();
        let rows =
            |v: &[f64]| -> Vec<Vec<f64>> { v.chunks_exact(n).map(<[f64]>::to_vec).collect() };
        let conditions = (self.conditions.iter())
            .map(|c| {
                let r = ConditionReport {
                    n_epochs: c.average.n_epochs,
                    dropped: c.dropped.clone(),
                    data: rows(&c.average.mean),
                    sd: rows(&c.average.sd),
                };
                (c.name.clone(), serde_json::to_value(r).unwrap_or_default())
            })
            .collect();
        let first = self.units.first().cloned().unwrap_or_default();
        EpochsReport {
            unit: match self.units.iter().all(|u| *u == first) {
                true => first,
                false => "mixed".into(),
            },
            units: self.units.clone(),
            fs: self.fs,
            times_s: self.times_s(),
            channels: self.labels.clone(),
            baseline_s: p.baseline,
            filter,
            conditions,
        }
    }

    /// Condition `c`'s average as CSV: a time column (s), then one per channel.
    pub fn csv(&self, c: usize) -> String {
        use std::fmt::Write as _;
        let n = self.len();
        let mut out = String::from("time_s");
        for (l, u) in self.labels.iter().zip(&self.units) {
            let _ = write!(out, ",{} ({u})", l.replace(',', " "));
        }
        out.push('\n');
        let mean = &self.conditions[c].average.mean;
        for (t, time) in self.times_s().iter().enumerate() {
            let _ = write!(out, "{time}");
            for ch in 0..self.labels.len() {
                let _ = write!(out, ",{}", mean[ch * n + t]);
            }
            out.push('\n');
        }
        out
    }
}

/// The traces around the events, in memory: spans of samples (per channel, in the reading
/// unit), each read and filtered once.
struct Traces {
    spans: Vec<(usize, Vec<Vec<f32>>)>,
}

impl Traces {
    /// Samples `start..start + n` of channel `c`, where one span holds them.
    fn channel(&self, start: usize, c: usize, n: usize) -> Option<&[f32]> {
        let i = self
            .spans
            .partition_point(|s| s.0 <= start)
            .checked_sub(1)?;
        let (first, data) = &self.spans[i];
        let at = start - first;
        data.get(c)?.get(at..at + n)
    }
}

/// The channels epochs take by default: every signal at the most common rate but stimulus and
/// annotation channels, as recorded.
pub fn default_montage(rec: &Recording) -> montage::Montage {
    let fs = rec.most_common_rate();
    let mut m = montage::BuiltIn::as_recorded(rec);
    m.derivations.retain(|d| {
        montage::find_channel(rec, &d.plus)
            .is_some_and(|c| rec.signals[c].kind != ChannelType::Stim && rec.signals[c].fs == fs)
    });
    m
}

/// Epochs of `rec` around `events` (its annotations, or the reviewer's edited list) through
/// `derivations` (resolved under the recording's bad channels and interpolation; a bad channel
/// not interpolated is left out), derivation `d` filtered by `filter_of(d)`.
pub fn epochs(
    rec: &Recording,
    events: &[Annotation],
    derivations: &[Derivation],
    filter_of: &(dyn Fn(usize) -> DisplayFilter + Sync),
    p: &EpochParams,
) -> Result<Epochs, EpochError> {
    prepare(rec, events, derivations, filter_of, p)?.average(p)
}

/// The events placed and the traces around them read: what `Prepared::average` needs, and all
/// a change of the baseline or the limits does not change (the ERP tab keeps it while those
/// sliders move). `p`'s events, window and bad-span rule are used here.
pub fn prepare(
    rec: &Recording,
    events: &[Annotation],
    derivations: &[Derivation],
    filter_of: &(dyn Fn(usize) -> DisplayFilter + Sync),
    p: &EpochParams,
) -> Result<Prepared, EpochError> {
    let invalid = |m: String| EpochError::Invalid(m);
    let picked: Vec<usize> = (0..derivations.len())
        .filter(|&d| !rec.signals[derivations[d].plus].bad || derivations[d].interpolated)
        .collect();
    let Some(first) = picked.first().map(|&d| &derivations[d]) else {
        return Err(invalid("no good channel to epoch".into()));
    };
    let fs = rec.signals[first.plus].fs;
    if let Some(d) = picked
        .iter()
        .map(|&d| &derivations[d])
        .find(|d| rec.signals[d.plus].fs != fs)
    {
        return Err(invalid(format!(
            "{} is sampled at {} Hz, {} at {fs} Hz: epoch channels of one rate",
            d.label, rec.signals[d.plus].fs, first.label
        )));
    }
    let filters: Vec<DisplayFilter> = picked.iter().map(|&d| filter_of(d)).collect();
    for (f, &d) in filters.iter().zip(&picked) {
        if f.is_active() {
            (f.validate_at(fs)).map_err(|e| invalid(format!("{}: {e}", derivations[d].label)))?;
        }
    }
    if p.events.is_empty() {
        return Err(invalid("name at least one event".into()));
    }
    let window = epochs::window(p.tmin, p.tmax, fs).map_err(invalid)?;
    let n = (window.1 - window.0 + 1) as usize;
    let signal = first.plus;
    let segments = rec.signal_segments(signal);
    let bad_spans: Vec<(f64, f64, &str)> = (events.iter())
        .filter(|a| {
            p.reject_by_annotation
                && a.description()
                    .trim()
                    .to_ascii_lowercase()
                    .starts_with("bad")
        })
        .map(|a| (a.onset, a.onset + a.duration, a.description().trim()))
        .collect();

    // Every event's window, as the first sample or why there is none.
    let mut conditions = Vec::new();
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for name in &p.events {
        let onsets: Vec<f64> = (events.iter())
            .filter(|a| a.description().trim() == name.trim())
            .map(|a| a.onset)
            .collect();
        if onsets.is_empty() {
            let mut known: Vec<&str> = events.iter().map(|a| a.description().trim()).collect();
            known.sort_unstable();
            known.dedup();
            known.truncate(20);
            return Err(EpochError::NoSuchEvent(name.clone(), known.join(", ")));
        }
        let mut events = Vec::new();
        let mut dropped = Vec::new();
        for (index, &t) in onsets.iter().enumerate() {
            let placed = segments.iter().find_map(|&(s0, first, len)| {
                let k = ((t - s0) * fs).round_ties_even();
                (k >= 0.0 && (k as usize) < len).then(|| (first, len, first as i64 + k as i64))
            });
            let start = placed.and_then(|(seg, len, k)| {
                let (a, b) = (k + window.0, k + window.1);
                (a >= seg as i64 && b < (seg + len) as i64).then_some(a as usize)
            });
            let reason = match (placed, start) {
                (None, _) => Some("its event is outside the recording or in a gap".to_string()),
                (Some(_), None) => Some("the window runs past the data's start or end".into()),
                _ => None,
            }
            .or_else(|| {
                let (a, b) = (t + window.0 as f64 / fs, t + window.1 as f64 / fs);
                (bad_spans.iter())
                    .find(|s| s.0 <= b && s.1 > a)
                    .map(|s| format!("overlaps the span {:?}", s.2))
            });
            match reason {
                Some(reason) => {
                    dropped.push(Dropped {
                        index,
                        onset_s: t,
                        reason,
                        channels: Vec::new(),
                    });
                    events.push((t, None));
                }
                None => {
                    let s = start.expect("placed");
                    windows.push((s, s + n));
                    events.push((t, Some(s)));
                }
            }
        }
        conditions.push((name.clone(), events, dropped));
    }

    // The traces, read in merged spans, in each channel's reading unit.
    let owned: Vec<Derivation> = picked.iter().map(|&d| derivations[d].clone()).collect();
    let scale: Vec<(String, f64)> = (owned.iter())
        .map(|d| reading_unit(&rec.signals[d.plus].unit))
        .collect();
    let traces = read_spans(rec, &owned, &filters, &segments, windows, &scale)?;

    let scalp_set = rec.scalp_electrodes();
    Ok(Prepared {
        fs,
        window,
        labels: owned.iter().map(|d| d.label.clone()).collect(),
        units: scale.into_iter().map(|s| s.0).collect(),
        kinds: owned.iter().map(|d| rec.signals[d.plus].kind).collect(),
        positions: owned.iter().map(|d| rec.signals[d.plus].position).collect(),
        scalp: (0..owned.len())
            .filter(|&i| scalp_set.contains(&owned[i].plus))
            .collect(),
        conditions,
        traces: Arc::new(traces),
    })
}

/// An event's onset (s) and the first sample of its window (`None`: outside the data).
pub type Placed = (f64, Option<usize>);

/// Events placed and traces read (`prepare`), to be averaged.
#[derive(Clone)]
pub struct Prepared {
    fs: f64,
    window: (i64, i64),
    labels: Vec<String>,
    units: Vec<String>,
    kinds: Vec<ChannelType>,
    positions: Vec<Option<[f64; 3]>>,
    scalp: Vec<usize>,
    /// Per condition: its name, every event's onset and window start, and those dropped so far.
    conditions: Vec<(String, Vec<Placed>, Vec<Dropped>)>,
    traces: Arc<Traces>,
}

impl Prepared {
    /// The epochs baseline-corrected, judged by `p`'s limits and averaged.
    pub fn average(&self, p: &EpochParams) -> Result<Epochs, EpochError> {
        let n = (self.window.1 - self.window.0 + 1) as usize;
        let baseline = match p.baseline {
            Some(b) => {
                Some(epochs::baseline_range(self.window, self.fs, b).map_err(EpochError::Invalid)?)
            }
            None => None,
        };
        let limit = |list: &[(ChannelType, f64)], c: usize| {
            let si = si_per_unit(&self.units[c]).map_or(1.0, |s| s.1);
            (list.iter())
                .find(|(k, _)| *k == self.kinds[c])
                .map(|(_, v)| v / si)
        };
        let channels = self.labels.len();
        let limits = Limits {
            reject: (0..channels).map(|c| limit(&p.reject, c)).collect(),
            flat: (0..channels).map(|c| limit(&p.flat, c)).collect(),
        };
        let labels = &self.labels;
        let traces = &self.traces;
        let conditions = (self.conditions.iter())
            .map(|(name, events, dropped)| {
                let (average, verdicts) =
                    epochs::average(events.len(), (channels, n), baseline, &limits, |i, c| {
                        traces.channel(events[i].1?, c, n)
                    });
                let mut dropped = dropped.clone();
                let mut kept = vec![false; events.len()];
                for (i, v) in verdicts.into_iter().enumerate() {
                    let (reason, channels) = match v {
                        Some(Verdict::Keep) => {
                            kept[i] = true;
                            continue;
                        }
                        Some(Verdict::TooLarge(c)) => ("peak-to-peak over the limit", c),
                        Some(Verdict::Flat(c)) => ("flat: peak-to-peak under the limit", c),
                        None => continue,
                    };
                    let channels: Vec<String> =
                        channels.iter().map(|&c| labels[c].clone()).collect();
                    dropped.push(Dropped {
                        index: i,
                        onset_s: events[i].0,
                        reason: format!("{reason} on {}", channels.join(", ")),
                        channels,
                    });
                }
                dropped.sort_by_key(|d| d.index);
                Condition {
                    name: name.clone(),
                    events: events.clone(),
                    kept,
                    dropped,
                    average,
                }
            })
            .collect();
        Ok(Epochs {
            fs: self.fs,
            window: self.window,
            labels: self.labels.clone(),
            units: self.units.clone(),
            kinds: self.kinds.clone(),
            positions: self.positions.clone(),
            scalp: self.scalp.clone(),
            conditions,
            baseline,
            traces: self.traces.clone(),
        })
    }
}

/// The derivations' samples over `windows` (`[start, end)`, sorted or not), merged where they
/// touch, each span filtered as its whole segment would be.
fn read_spans(
    rec: &Recording,
    derivations: &[Derivation],
    filters: &[DisplayFilter],
    segments: &[(f64, usize, usize)],
    mut windows: Vec<(usize, usize)>,
    scale: &[(String, f64)],
) -> Result<Traces, ReadError> {
    windows.sort_unstable();
    // Windows closer than a filter's two margins are read as one: each span read filters its
    // margins too, and overlapping margins would be filtered twice.
    let fs = derivations.first().map_or(1.0, |d| rec.signals[d.plus].fs);
    let margin = (filters.iter())
        .filter(|f| f.is_active())
        .map(|f| f.margin(fs))
        .max()
        .unwrap_or(0);
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (a, b) in windows {
        match merged.last_mut() {
            Some(last) if a <= last.1 + 2 * margin => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let group: Vec<usize> = (0..derivations.len()).collect();
    let mut spans = Vec::with_capacity(merged.len());
    for (a, b) in merged {
        let bounds = (segments.iter())
            .find(|s| s.1 <= a && b <= s.1 + s.2)
            .map_or((a, b), |s| (s.1, s.1 + s.2));
        let mut data =
            montage::derive_filtered(rec, derivations, &group, a, b - a, bounds, |d| filters[d])?;
        for (x, (_, k)) in data.iter_mut().zip(scale) {
            if *k != 1.0 {
                x.iter_mut().for_each(|v| *v *= *k as f32);
            }
        }
        spans.push((a, data));
    }
    Ok(Traces { spans })
}
