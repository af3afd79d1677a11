//! The Lab Streaming Layer: a live EEG stream as a `Source` (`ede live --lsl`), and any
//! recording published as an LSL outlet (`ede stream`), through the LSL project's `lsl` crate
//! (it builds liblsl; see `.cargo/config.toml` for the one build fix it needs).
//!
//! Lost samples are found from the time stamps: after clock synchronisation, a step between
//! two samples of more than `GAP_S` beyond the nominal one is a gap of that many samples.
//! Shorter steps are taken as the sender's timing jitter (a sender that stamps a chunk when it
//! pushes it moves its samples by milliseconds), so a loss shorter than that goes unmarked.

use std::time::{Duration, Instant};

use lsl::{ExPushable, Pullable};

use super::source::{Event, Source, StreamMeta};
use crate::dsp::ica::Observations;
use crate::recording::channel::is_eog;
use crate::recording::{ChannelType, Recording, most_common_rate};

/// Steps between time stamps beyond the nominal one by more than this are gaps, seconds.
pub const GAP_S: f64 = 0.1;

/// How an inlet waits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InletOptions {
    /// Seconds to look for the stream on the network.
    pub resolve_s: f64,
    /// Seconds without samples before the stream is reported stalled.
    pub stall_s: f64,
    /// Seconds without samples before the session ends.
    pub give_up_s: f64,
}

impl Default for InletOptions {
    fn default() -> Self {
        InletOptions {
            resolve_s: 10.0,
            stall_s: 1.0,
            give_up_s: 30.0,
        }
    }
}

pub struct LslSource {
    inlet: lsl::StreamInlet,
    meta: StreamMeta,
    /// The stream's channels that are used (EEG and EOG, or all when none says its type).
    picks: Vec<usize>,
    opts: InletOptions,
    buf: Vec<f32>,
    last_stamp: Option<f64>,
    /// The sample after a gap, held back while the gap is reported.
    carry: Option<(Vec<f32>, f64)>,
    gap: u64,
    last_data: Instant,
    stalled: bool,
    /// Most samples handed out at once.
    max_chunk: usize,
}

impl LslSource {
    /// Finds a stream by name, or by `property=value` (e.g. `type=EEG`), and opens an inlet
    /// that recovers on its own when the sender comes back after a disconnection.
    pub fn resolve(query: &str, opts: InletOptions) -> Result<Self, String> {
        let (prop, value) = query.split_once('=').unwrap_or(("name", query));
        let found = lsl::resolve_byprop(prop.trim(), value.trim(), 1, opts.resolve_s)
            .map_err(|e| format!("looking for LSL stream {query:?}: {e:?}"))?;
        let Some(info) = found.into_iter().next() else {
            return Err(format!(
                "no LSL stream with {prop} {value:?} found in {} s (is it on this network? \
                 LSLAPICFG can name known peers)",
                opts.resolve_s
            ));
        };
        let inlet = lsl::StreamInlet::new(&info, 360, 0, true)
            .map_err(|e| format!("opening LSL stream {query:?}: {e:?}"))?;
        let mut full = inlet
            .info(opts.resolve_s)
            .map_err(|e| format!("reading LSL stream {query:?}'s metadata: {e:?}"))?;
        inlet
            .set_postprocessing(&[lsl::ProcessingOption::ClockSync])
            .map_err(|e| format!("{e:?}"))?;
        inlet
            .open_stream(opts.resolve_s)
            .map_err(|e| format!("opening LSL stream {query:?}: {e:?}"))?;
        let fs = full.nominal_srate();
        if fs.is_nan() || fs <= 0.0 {
            return Err(format!(
                "LSL stream {query:?} has no regular sampling rate: ede cleans regularly \
                 sampled EEG"
            ));
        }
        let n = full.channel_count().max(0) as usize;
        let mut channels = Vec::with_capacity(n);
        let mut ch = full.desc().child("channels").child("channel");
        while !ch.empty() && channels.len() < n {
            channels.push((
                ch.child_value_named("label"),
                ch.child_value_named("unit"),
                ch.child_value_named("type"),
            ));
            ch = ch.next_sibling_named("channel");
        }
        channels.resize(n, Default::default());
        let labelled: Vec<(String, String, String)> = (channels.into_iter().enumerate())
            .map(|(i, (l, u, t))| {
                let label = if l.trim().is_empty() {
                    format!("Ch{}", i + 1)
                } else {
                    l.trim().to_string()
                };
                let unit = if u.trim().is_empty() {
                    "microvolts".to_string()
                } else {
                    u.trim().to_string()
                };
                (label, unit, t.trim().to_ascii_uppercase())
            })
            .collect();
        let typed = labelled.iter().any(|c| !c.2.is_empty());
        let picks: Vec<usize> = (0..n)
            .filter(|&i| !typed || matches!(labelled[i].2.as_str(), "EEG" | "EOG"))
            .collect();
        if picks.is_empty() {
            return Err(format!(
                "LSL stream {query:?} has no channel of type EEG or EOG"
            ));
        }
        let wide = !matches!(
            full.channel_format(),
            lsl::ChannelFormat::Int16 | lsl::ChannelFormat::Int8
        );
        let meta = StreamMeta {
            name: full.stream_name(),
            labels: picks.iter().map(|&i| labelled[i].0.clone()).collect(),
            units: picks.iter().map(|&i| labelled[i].1.clone()).collect(),
            positions: vec![None; picks.len()],
            eog: (picks.iter())
                .map(|&i| match labelled[i].2.as_str() {
                    "" => is_eog(&labelled[i].0),
                    t => ChannelType::parse(t) == Some(ChannelType::Eog),
                })
                .collect(),
            fs,
            start: now(),
            wide,
            ranges: None,
        };
        Ok(LslSource {
            inlet,
            meta,
            picks,
            opts,
            buf: Vec::with_capacity(n),
            last_stamp: None,
            carry: None,
            gap: 0,
            last_data: Instant::now(),
            stalled: false,
            max_chunk: ((fs / 16.0).ceil() as usize).max(1),
        })
    }

    fn append(&self, rows: &mut [Vec<f32>], sample: &[f32]) {
        for (row, &i) in rows.iter_mut().zip(&self.picks) {
            row.push(sample.get(i).copied().unwrap_or(0.0));
        }
    }
}

impl Source for LslSource {
    fn meta(&self) -> &StreamMeta {
        &self.meta
    }

    fn next(&mut self) -> Event {
        if self.gap > 0 {
            return Event::Gap(std::mem::take(&mut self.gap));
        }
        let fs = self.meta.fs;
        let mut rows = vec![Vec::new(); self.picks.len()];
        let mut have = 0;
        if let Some((sample, stamp)) = self.carry.take() {
            self.append(&mut rows, &sample);
            self.last_stamp = Some(stamp);
            have = 1;
        }
        while have < self.max_chunk {
            // Wait for the first sample; after it take only what is already there.
            let timeout = if have == 0 { 0.05 } else { 0.0 };
            let stamp = match self.inlet.pull_sample_buf(&mut self.buf, timeout) {
                Ok(s) => s,
                Err(e) => return Event::Ended(Some(format!("LSL stream lost: {e:?}"))),
            };
            if stamp == 0.0 {
                if have > 0 {
                    break;
                }
                let quiet = self.last_data.elapsed().as_secs_f64();
                if quiet > self.opts.give_up_s {
                    return Event::Ended(Some(format!("no samples for {quiet:.0} s")));
                }
                if quiet > self.opts.stall_s && !self.stalled {
                    self.stalled = true;
                    return Event::Stalled;
                }
                continue;
            }
            self.last_data = Instant::now();
            self.stalled = false;
            if let Some(prev) = self.last_stamp {
                let missing = ((stamp - prev) * fs).round() - 1.0;
                if missing > (GAP_S * fs).max(1.0) {
                    self.carry = Some((self.buf.clone(), stamp));
                    self.last_stamp = None;
                    if have == 0 {
                        return Event::Gap(missing as u64);
                    }
                    self.gap = missing as u64;
                    break;
                }
            }
            let sample = std::mem::take(&mut self.buf);
            self.append(&mut rows, &sample);
            self.buf = sample;
            self.last_stamp = Some(stamp);
            have += 1;
        }
        Event::Samples(Observations::from_rows(&rows))
    }
}

fn now() -> chrono::NaiveDateTime {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    chrono::DateTime::from_timestamp(d.as_secs() as i64, d.subsec_nanos())
        .unwrap_or_default()
        .naive_utc()
}

/// How `ede stream` publishes a recording.
#[derive(Debug, Clone, PartialEq)]
pub struct PublishOptions {
    pub name: String,
    pub stream_type: String,
    /// Times real time.
    pub speed: f64,
    /// Start over at the end, time stamps going on.
    pub looped: bool,
    /// Seconds of signal per chunk pushed.
    pub chunk_s: f64,
    /// Wait until a receiver has connected before the first sample.
    pub wait_for_consumer: Option<f64>,
    /// A simulated disconnection, for demos and tests: at `.0` seconds of stream the outlet
    /// goes away for `.1` seconds of stream, whose samples are lost, and comes back under the
    /// same source id.
    pub glitch: Option<(f64, f64)>,
}

/// What was published.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub channels: Vec<String>,
    pub fs: f64,
    pub samples: u64,
    pub skipped_signals: Vec<String>,
}

/// Publishes `rec`'s signals at its most common sampling rate (LSL streams have one rate) as
/// an LSL outlet of 32-bit floats, with the channels' labels, units (LSL's names for volts)
/// and types (EEG, EOG, or MISC) in its metadata. `on_chunk(samples so far)` may stop it by
/// returning false.
pub fn publish(
    rec: &Recording,
    opts: &PublishOptions,
    on_chunk: &mut dyn FnMut(u64) -> bool,
) -> Result<Published, String> {
    let with_samples = rec.signals.iter().filter(|s| s.samples > 0);
    let fs = most_common_rate(with_samples.map(|s| s.fs))
        .ok_or("the recording has no signal to stream")?;
    let picks: Vec<usize> = (0..rec.signals.len())
        .filter(|&i| (rec.signals[i].fs - fs).abs() < 1e-9 && rec.signals[i].samples > 0)
        .collect();
    let skipped_signals = (rec.signals.iter())
        .enumerate()
        .filter(|(i, _)| !picks.contains(i))
        .map(|(_, s)| s.label.clone())
        .collect();
    let samples = picks
        .iter()
        .map(|&i| rec.signals[i].samples)
        .min()
        .unwrap_or(0);
    if samples == 0 {
        return Err("the recording has no samples to stream".into());
    }
    if !(opts.speed > 0.0 && opts.speed.is_finite()) {
        return Err(format!("speed must be positive, got {}", opts.speed));
    }
    let name = (rec.path.as_ref()).map_or("demo".into(), |p| p.display().to_string());
    let mut info = lsl::StreamInfo::new(
        &opts.name,
        &opts.stream_type,
        picks.len() as u32,
        fs,
        lsl::ChannelFormat::Float32,
        &format!("ede:{name}"),
    )
    .map_err(|e| format!("LSL stream info: {e:?}"))?;
    let mut channels = info.desc().append_child("channels");
    for &i in &picks {
        let s = &rec.signals[i];
        let kind = match s.kind {
            ChannelType::Eog => "EOG",
            ChannelType::Eeg => "EEG",
            _ => "MISC",
        };
        channels
            .append_child("channel")
            .append_child_value("label", &s.label)
            .append_child_value("unit", lsl_unit(&s.unit))
            .append_child_value("type", kind);
    }
    info.desc()
        .append_child("acquisition")
        .append_child_value("manufacturer", "ede")
        .append_child_value("model", &format!("ede stream {name}"));
    let chunk = ((opts.chunk_s * fs).round() as usize).max(1);
    let open = || {
        lsl::StreamOutlet::new(&info, chunk as i32, 360).map_err(|e| format!("LSL outlet: {e:?}"))
    };
    let mut outlet = Some(open()?);
    if let (Some(wait), Some(o)) = (opts.wait_for_consumer, &outlet)
        && !o.wait_for_consumers(wait)
    {
        return Err(format!("no receiver connected within {wait} s"));
    }
    let glitch = opts
        .glitch
        .map(|(at, len)| ((at * fs).round() as u64, (len * fs).round() as u64));
    let rate = fs * opts.speed;
    let t0 = Instant::now();
    let stamp0 = lsl::local_clock();
    // `sent` counts samples in stream time (lost ones included); `pos` is the file position.
    let (mut sent, mut pos) = (0u64, 0usize);
    let mut block = vec![vec![0f32; chunk]; picks.len()];
    loop {
        if pos >= samples {
            if !opts.looped {
                break;
            }
            pos = 0;
        }
        if let Some((at, len)) = glitch
            && sent == at
        {
            drop(outlet.take());
            sent += len;
            pos = (pos + len as usize) % samples;
            let due = t0 + Duration::from_secs_f64(sent as f64 / rate);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            outlet = Some(open()?);
            continue;
        }
        let mut n = chunk.min(samples - pos);
        if let Some((at, _)) = glitch
            && sent < at
        {
            n = n.min((at - sent) as usize);
        }
        for (row, &i) in block.iter_mut().zip(&picks) {
            rec.read(i, pos, &mut row[..n]).map_err(|e| e.to_string())?;
        }
        let frames: Vec<Vec<f32>> = (0..n)
            .map(|k| block.iter().map(|row| row[k]).collect())
            .collect();
        // Stamped in the stream's own time (played faster, the stamps still step by 1 / fs),
        // so that a receiver counts lost samples right at any speed.
        let stamps: Vec<f64> = (0..n as u64)
            .map(|k| stamp0 + (sent + k) as f64 / fs)
            .collect();
        let due = t0 + Duration::from_secs_f64((sent + n as u64) as f64 / rate);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        if let Some(o) = &outlet {
            o.push_chunk_stamped_ex(&frames, &stamps, true)
                .map_err(|e| format!("LSL push: {e:?}"))?;
        }
        sent += n as u64;
        pos += n;
        if !on_chunk(sent) {
            break;
        }
    }
    // Closing the outlet drops what it has not yet sent: give the last chunk time to leave.
    if outlet.as_ref().is_some_and(|o| o.have_consumers()) {
        std::thread::sleep(Duration::from_millis(500));
    }
    Ok(Published {
        channels: picks
            .iter()
            .map(|&i| rec.signals[i].label.clone())
            .collect(),
        fs,
        samples: sent,
        skipped_signals,
    })
}

/// EDF's units under the names LSL's metadata conventions use.
fn lsl_unit(unit: &str) -> &str {
    match unit.trim() {
        "uV" | "µV" | "μV" => "microvolts",
        "mV" => "millivolts",
        "V" => "volts",
        u => u,
    }
}
