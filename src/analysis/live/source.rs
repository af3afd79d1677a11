//! Where a live session's samples come from: a recording played at its pace (or as fast as the
//! pipeline goes), or a Lab Streaming Layer inlet (`super::lsl`). A source hands out chunks in
//! order and says when samples were lost (a gap: the stream's time goes on across it), when
//! nothing has arrived for a while (a stall) and when it has ended.

use std::time::{Duration, Instant};

use chrono::NaiveDateTime;

use super::LiveOptions;
use crate::analysis::blink::{EegData, row_unit};
use crate::dsp::ica::Observations;
use crate::recording::Recording;

/// What a source says about its stream.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamMeta {
    /// The file or the LSL stream's name.
    pub name: String,
    pub labels: Vec<String>,
    pub units: Vec<String>,
    /// Which channels are EOG (by the stream's or the file's channel types).
    pub eog: Vec<bool>,
    /// Positions the file gives (none for LSL streams).
    pub positions: Vec<Option<[f64; 3]>>,
    pub fs: f64,
    /// Clock time of the first sample.
    pub start: NaiveDateTime,
    /// Samples wider than 16 bits (BDF files, LSL's float and 32-bit formats): recorded as BDF+.
    pub wide: bool,
    /// Each channel's physical range where the source states one (a file's header).
    pub ranges: Option<Vec<(f64, f64)>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The next samples (channels x samples).
    Samples(Observations),
    /// This many samples were lost before the next ones.
    Gap(u64),
    /// Nothing has arrived for `stall_s`; said once per stall, which ends with the next samples.
    Stalled,
    /// The source has nothing more to give, and why if it failed.
    Ended(Option<String>),
}

pub trait Source {
    fn meta(&self) -> &StreamMeta;
    /// Blocks until the next event.
    fn next(&mut self) -> Event;
    /// The receiver paused: a paced source keeps its pace from the next sample on (a live
    /// one buffers meanwhile).
    fn paused(&mut self) {}
    /// Times real time for a recording played (`None`: as fast as it is taken); a live
    /// stream keeps its own pace.
    fn set_speed(&mut self, _speed: Option<f64>) {}
    /// Whether the samples come as fast as they are taken (a recording at maximum speed), so
    /// that the next hop's are at hand as soon as this one's are.
    fn unpaced(&self) -> bool {
        false
    }
}

/// A recording's EEG channels played as a stream: chunks of `LiveOptions::chunk_s`, each
/// handed out when its last sample would have been recorded at `speed` times real time (at
/// once for `None`), for `duration_s` seconds or to the end.
pub struct FileSource<'a> {
    meta: StreamMeta,
    data: &'a Observations,
    at: usize,
    end: usize,
    chunk: usize,
    speed: Option<f64>,
    /// The pace: when the sample `.1` was due.
    pace: Option<(Instant, usize)>,
    /// Samples before this one are handed out at once (a window filled before the demo).
    unpaced_until: usize,
}

impl<'a> FileSource<'a> {
    /// `rec` is the recording `data` was loaded from, for its name, units, ranges and start;
    /// without one the channels are taken to be in microvolts.
    pub fn new(data: &'a EegData, rec: Option<&Recording>, opts: &LiveOptions) -> Self {
        let n = data.data.rows;
        let meta = match rec {
            Some(rec) => {
                let signals: Vec<_> = data.signals.iter().map(|&i| &rec.signals[i]).collect();
                StreamMeta {
                    name: (rec.path.as_ref()).map_or("demo".into(), |p| p.display().to_string()),
                    labels: data.channels.labels.clone(),
                    // The rows' units (`EegData::scale`: microvolts, fT, fT/cm).
                    units: (signals.iter())
                        .map(|s| row_unit(&s.unit).map_or(s.unit.clone(), |u| u.0.into()))
                        .collect(),
                    eog: data.channels.eog.clone(),
                    positions: data.positions.clone(),
                    fs: data.fs,
                    start: rec.start,
                    wide: rec.format.edf_family() != Some("edf"),
                    ranges: Some(
                        (signals.iter().zip(&data.scale))
                            .map(|(s, &k)| (s.physical_min * k, s.physical_max * k))
                            .collect(),
                    ),
                }
            }
            None => StreamMeta {
                name: "stream".into(),
                labels: data.channels.labels.clone(),
                units: vec!["uV".into(); n],
                eog: data.channels.eog.clone(),
                positions: data.positions.clone(),
                fs: data.fs,
                start: NaiveDateTime::default(),
                wide: true,
                ranges: None,
            },
        };
        let end = (opts.duration_s).map_or(data.data.cols, |d| {
            ((d * data.fs).round() as usize).min(data.data.cols)
        });
        FileSource {
            meta,
            data: &data.data,
            at: 0,
            end,
            chunk: ((opts.chunk_s * data.fs).round() as usize).max(1),
            speed: opts.speed,
            pace: None,
            unpaced_until: 0,
        }
    }

    /// Plays from sample `from` on (the start time moves with it).
    pub fn starting_at(mut self, from: usize) -> Self {
        let dt = chrono::Duration::nanoseconds((from as f64 / self.meta.fs * 1e9).round() as i64);
        self.meta.start += dt;
        let length = self.end - self.at;
        self.at = from.min(self.data.cols);
        self.end = (self.at + length).min(self.data.cols);
        self
    }

    /// Hands out the first `samples` at once, as if recorded before the session began.
    pub fn unpaced(mut self, samples: usize) -> Self {
        self.unpaced_until = self.at + samples;
        self
    }

    /// Samples handed out so far, from the recording's start.
    pub fn position(&self) -> usize {
        self.at
    }

    pub fn length(&self) -> usize {
        self.data.cols
    }
}

impl Source for FileSource<'_> {
    fn meta(&self) -> &StreamMeta {
        &self.meta
    }

    fn next(&mut self) -> Event {
        if self.at >= self.end {
            return Event::Ended(None);
        }
        let to = (self.at + self.chunk).min(self.end);
        match self.speed {
            Some(speed) if to > self.unpaced_until => {
                let (t0, from) = *self.pace.get_or_insert((Instant::now(), self.at));
                let due = t0 + Duration::from_secs_f64((to - from) as f64 / self.meta.fs / speed);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            _ => self.pace = None,
        }
        let part = self.data.block(self.data.rows, self.at..to);
        self.at = to;
        Event::Samples(part)
    }

    fn paused(&mut self) {
        self.pace = None;
    }

    fn set_speed(&mut self, speed: Option<f64>) {
        self.speed = speed;
        self.pace = None;
    }
    fn unpaced(&self) -> bool {
        self.speed.is_none()
    }
}

/// Fills `missing` samples after a gap with each channel's last value: the pipeline needs a
/// continuous signal, and a flat stretch disturbs its ICA least.
pub fn gap_fill(last: &[f32], missing: usize) -> Observations {
    let rows: Vec<Vec<f32>> = last.iter().map(|&v| vec![v; missing]).collect();
    Observations::from_rows(&rows)
}
