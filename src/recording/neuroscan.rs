//! Neuroscan CNT: the continuous recordings of Compumedics Neuroscan's SCAN/Acquire (SynAmps,
//! NuAmps). A `.cnt` file is a 900-byte SETUP header (it starts with "Version 3.0"), one
//! 75-byte ELECTLOC record per channel (label, bad flag, x/y on the 2-D layout, baseline,
//! sensitivity, calibration), the samples as little-endian integers, multiplexed (all channels
//! of a time point together, or blocks of `ChannelOffset` points per channel), and an event
//! table at the header's `EventTablePos`. ANT Neuro's `.cnt` (RIFF) is another format
//! (`ant.rs`). Averaged (`.avg`) and epoched (`.eeg`) Neuroscan files share the header but not
//! the layout: ede does not read them (without an event table position or a sample count,
//! opening one says so).
//!
//! Everything is read as MNE-Python's `read_raw_cnt` reads it with its defaults:
//! - a sample is (stored - baseline) x calibration x sensitivity / 204.8 uV;
//! - every channel is EEG (MNE types EOG/ECG/EMG only when told to, not from the header);
//! - positions: the header's x, -y, scaled and centred onto a unit sphere (MNE's
//!   `_topo_to_sphere`, in float32 as MNE computes it): a head of radius 1 "metre", so
//!   directions, not distances;
//! - events (table types 1, 2 and 3): onset = (byte offset - data start) / bytes per time
//!   point - 1 sample (type 3 gives the offset in time points), floored, never below 0; the
//!   text is "KeyPad Response k" (low nibble of the keypad byte), else "Keyboard Response k",
//!   else the stimulus code; a reject marker (keypad byte 0xC0) becomes "BAD_code" lasting until
//!   the accept marker (0xD0) after it, and accept markers are dropped; onsets are rounded to
//!   the microsecond and events past the end dropped, as MNE's `set_annotations` does;
//! - the start is the header's date and time as "mm/dd/yy HH:MM:SS" (Python's `strptime`
//!   rules), else unknown. MNE reads that time in the computer's time zone; ede takes it as
//!   written (the same as MNE's on a computer set to UTC).
//!
//! 16 or 32-bit samples: the header does not say, and MNE asks (`data_format`). ede decides
//! from the sizes: the data run from the end of the channel records to the event table, so
//! they are channels x samples x 2 or x 4 bytes. Where the header's sample count gives one of
//! these exactly, that is the width; where only 16 bits divide the data evenly, int16; where
//! both could (the header's count is 0, as in MNE's test file), int16 is a guess (MNE's
//! starting assumption, the format's original width), said in the warnings. In files over
//! 2 GB the header's event table position has overflowed (MNE's gh-6535): there the width is
//! the one whose end of data agrees with that position modulo 2^32. `recording_info` says
//! which width was read and how it was decided (`ede info` prints it).
//!
//! Where ede differs: MNE (`header="auto"`) also takes byte 4 of a channel record as a bad
//! flag, which is the fifth letter of a label of five letters or more (it marks LEFT_EAR and
//! VEOGR bad in MNE's test file); ede takes it only where the label ends before it. Where MNE
//! fails (non-ASCII text, an unknown event table type, a partial event record, unmatched
//! reject markers), ede reads what it can and warns.

use std::path::Path;
use std::sync::Arc;

use memmap2::Mmap;

use super::binary::{MatrixSource, decode_text};
use super::{
    Annotation, ChannelType, Format, ReadError, Recording, SampleSource, SignalInfo, unknown_start,
};

/// The SETUP header's size, and each channel's ELECTLOC record's.
const SETUP: usize = 900;
const ELECTLOC: usize = 75;
/// The event table's own header (type, size, offset) before its records.
const TEEG: usize = 9;
/// Files this large have an overflowed event table position (MNE's threshold).
const LARGE: u64 = 2_000_000_000;
/// More events than this are no recording's: the rest are left out.
const MAX_EVENTS: usize = 1 << 20;

/// Whether a file's first bytes are a Neuroscan SETUP header: "Version " and a digit ("Version
/// 3.0" in SCAN 3 and 4 files; MNE checks nothing). ANT's RIFF files are not.
pub fn sniff(head: &[u8]) -> bool {
    head.strip_prefix(b"Version ")
        .and_then(|r| r.first())
        .is_some_and(u8::is_ascii_digit)
}

/// A CNT is one file: nothing beside it makes it one.
pub fn is_companion(_path: &Path) -> bool {
    false
}

/// Little-endian numbers at fixed offsets of the header.
fn bytes<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    (at.checked_add(N).and_then(|e| b.get(at..e)))
        .and_then(|s| s.try_into().ok())
        .unwrap_or([0; N])
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(bytes(b, at))
}

fn f32_at(b: &[u8], at: usize) -> f32 {
    f32::from_le_bytes(bytes(b, at))
}

/// A NUL-terminated text field (MNE's `read_str`).
fn text_at(b: &[u8], at: usize, len: usize) -> String {
    let field = b
        .get(at..at.saturating_add(len).min(b.len()))
        .unwrap_or(&[]);
    let end = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    decode_text(&field[..end])
}

/// How wide the samples are and how many there are, with how that was decided.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Layout {
    width: usize,
    samples: usize,
    /// Where the event table is (absent where it cannot be).
    table: Option<usize>,
    /// How the width was decided: `recording_info` and, for a guess, a warning.
    how: &'static str,
    guess: bool,
}

/// The width and sample count from the header's counts and the file's size (module doc).
fn layout(
    channels: usize,
    header_samples: i32,
    table_pos: i32,
    file_len: usize,
    warnings: &mut Vec<String>,
) -> Result<Layout, String> {
    let start = SETUP + ELECTLOC * channels;
    let ns = usize::try_from(header_samples).ok().filter(|&n| n > 0);
    let end_of = |w: usize| ns.and_then(|n| n.checked_mul(channels * w)?.checked_add(start));
    let fits = |w: usize| end_of(w).is_some_and(|e| e <= file_len);
    const COUNT: &str = "from the header's number of samples and the event table's position";
    const UNEVEN: &str = "int32 would not fill the data up to the event table evenly";
    const PAST: &str = "int32 samples would run past the end of the file";
    let (width, table, how, guess) = if (file_len as u64) < LARGE {
        let pos = usize::try_from(table_pos).ok().filter(|&p| p >= start);
        match pos.filter(|&p| p <= file_len) {
            Some(pos) => {
                let data = pos - start;
                let (width, how, guess) = if end_of(2) == Some(pos) {
                    (2, COUNT, false)
                } else if end_of(4) == Some(pos) {
                    (4, COUNT, false)
                } else if !data.is_multiple_of(channels * 2) {
                    (
                        2,
                        "neither width fills the data up to the event table evenly",
                        true,
                    )
                } else if !data.is_multiple_of(channels * 4) {
                    (2, UNEVEN, false)
                } else {
                    (
                        2,
                        "int32 would fill the data up to the event table as well",
                        true,
                    )
                };
                (width, Some(pos), how, guess)
            }
            // MNE then puts the table after the header's number of samples.
            None if fits(2) || fits(4) => {
                warnings.push(format!(
                    "the header's event table position ({table_pos}) is outside the file's \
                     data: the table is looked for after the samples"
                ));
                let w = if fits(2) { 2 } else { 4 };
                let how = if fits(4) {
                    "the header's event table position is wrong"
                } else {
                    PAST
                };
                (w, end_of(w), how, fits(4))
            }
            None => {
                return Err(format!(
                    "the header gives neither a usable event table position ({table_pos}) nor \
                     the number of samples: is it an averaged or epoched Neuroscan file?"
                ));
            }
        }
    } else {
        // The position overflowed 32 bits: the true end of data agrees with it modulo 2^32.
        let agrees = |w: usize| fits(w) && end_of(w).map(|e| e as u32) == Some(table_pos as u32);
        let (w, how, guess) = match (agrees(2), agrees(4)) {
            (true, false) => (2, COUNT, false),
            (false, true) => (4, COUNT, false),
            _ if fits(2) && !fits(4) => (2, PAST, false),
            _ if fits(2) => (
                2,
                "the event table position does not tell in a file this large",
                true,
            ),
            _ => {
                return Err(
                    "in a file over 2 GB the header's event table position has overflowed, and \
                     its number of samples does not fit in the file"
                        .into(),
                );
            }
        };
        (w, end_of(w), how, guess)
    };
    let row = channels * width;
    let samples = match (ns, table) {
        (Some(n), _) => n,
        (None, Some(pos)) => {
            let data = pos - start;
            if !data.is_multiple_of(row) {
                warnings.push(format!(
                    "the {data} bytes of samples are not a whole number of time points of \
                     {channels} channels"
                ));
            }
            data / row
        }
        (None, None) => 0,
    };
    // MNE reads the header's count as it stands; past the end of the file it fails.
    let room = file_len.saturating_sub(start) / row;
    if samples > room {
        warnings.push(format!(
            "the header's {samples} samples do not fit in the file: {room} are read"
        ));
    }
    Ok(Layout {
        width,
        samples: samples.min(room),
        table: table.filter(|&p| p.checked_add(TEEG).is_some_and(|e| e <= file_len)),
        how,
        guess,
    })
}

pub fn open(path: &Path) -> Result<Recording, ReadError> {
    let bad = |why: String| ReadError::invalid(path, why);
    let map = MatrixSource::map(path)?;
    let b: &[u8] = &map;
    if b.len() < SETUP || !sniff(b) {
        return Err(bad(
            "not a Neuroscan CNT file: it does not start with a 900-byte \"Version 3.0\" header"
                .into(),
        ));
    }
    let channels = u16::from_le_bytes(bytes(b, 370)) as usize;
    let fs = u16::from_le_bytes(bytes(b, 376)) as f64;
    if channels == 0 || fs == 0.0 {
        return Err(bad(format!(
            "the header gives {channels} channels at {fs} Hz: is it a Neuroscan CNT file?"
        )));
    }
    let start = SETUP + ELECTLOC * channels;
    if b.len() < start {
        return Err(bad(format!(
            "the file is truncated: {channels} channel records need {start} bytes, the file \
             has {}",
            b.len()
        )));
    }
    let mut warnings = Vec::new();
    let lay = layout(
        channels,
        i32_at(b, 864),
        i32_at(b, 886),
        b.len(),
        &mut warnings,
    )
    .map_err(bad)?;
    if lay.guess {
        warnings.push(format!(
            "the file does not say whether its samples are 16 or 32-bit: they are read as \
             int16, as MNE-Python reads them with data_format='int16' ({})",
            lay.how
        ));
    }
    // ChannelOffset: samples come in blocks of this many time points per channel.
    let block = match i32_at(b, 894) {
        n if n > 1 => (n as usize / lay.width).max(1),
        _ => 1,
    };
    // The last stored number of the last channel's last block.
    let need = match lay.samples {
        0 => Some(0),
        n => ((n - 1) / block)
            .checked_mul(channels)
            .and_then(|v| v.checked_add(channels - 1))
            .and_then(|v| v.checked_mul(block))
            .and_then(|v| v.checked_add((n - 1) % block + 1)),
    };
    if (need.and_then(|n| n.checked_mul(lay.width))).is_none_or(|n| n > b.len() - start) {
        return Err(bad(format!(
            "the file is truncated: {} samples of {channels} channels do not fit in it",
            lay.samples
        )));
    }
    let (stored_min, stored_max) = if lay.width == 2 {
        (i16::MIN as f64, i16::MAX as f64)
    } else {
        (i32::MIN as f64, i32::MAX as f64)
    };
    let (mut signals, mut gains, mut zeros, mut xy) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for c in 0..channels {
        let at = SETUP + ELECTLOC * c;
        let label = text_at(b, at, 10);
        // The bad flag at 14; MNE also reads byte 4, which only where the label ends before
        // it is no letter of the label.
        let flag = |k: usize| b.get(at + k).is_some_and(|&v| v != 0);
        let short = b[at..at + 4].contains(&0);
        let is_bad = flag(14) || (short && flag(4));
        xy.push((f32_at(b, at + 19), -f32_at(b, at + 23)));
        let baseline = i16::from_le_bytes(bytes(b, at + 47)) as f64;
        let sensitivity = f32_at(b, at + 59) as f64;
        let cal = f32_at(b, at + 71) as f64;
        // MNE's calibration in volts, in microvolts.
        let gain = cal * sensitivity * 1e-6 / 204.8 * 1e6;
        let (lo, hi) = (
            (stored_min - baseline) * gain,
            (stored_max - baseline) * gain,
        );
        let range = (lo.min(hi), lo.max(hi));
        signals.push(SignalInfo {
            kind: ChannelType::Eeg,
            bad: is_bad,
            ..SignalInfo::continuous(label, "uV".into(), fs, lay.samples, range)
        });
        gains.push(gain);
        zeros.push(baseline);
    }
    for (s, p) in signals.iter_mut().zip(topo_to_sphere(&xy)) {
        s.position = p;
    }
    let annotations = match lay.table {
        Some(pos) => events(b, pos, channels, &lay, fs, &mut warnings),
        None => Vec::new(),
    };
    let date = format!("{} {}", text_at(b, 225, 10), text_at(b, 235, 12));
    let start_time = parse_date(&date).unwrap_or_else(|| {
        warnings.push(format!(
            "the recording date \"{}\" is not a date as month/day/year hour:minute:second: \
             the start time is unknown",
            date.trim()
        ));
        unknown_start()
    });
    let patient = text_at(b, 121, 20).trim().to_string();
    let source = CntSource {
        map,
        offset: start,
        width: lay.width,
        channels,
        block,
        gains,
        zeros,
    };
    let mut rec = Recording::continuous(
        Some(path.to_path_buf()),
        Format::Cnt,
        start_time,
        signals,
        annotations,
        warnings,
        lay.samples as f64 / fs,
        Arc::new(source),
    );
    let bits = if lay.width == 2 { "int16" } else { "int32" };
    let guess = if lay.guess { "a guess: " } else { "" };
    rec.recording_info = format!("{bits} samples ({guess}{})", lay.how);
    rec.patient = patient;
    Ok(rec)
}

/// The event table's records as MNE's annotations (module doc).
fn events(
    b: &[u8],
    pos: usize,
    channels: usize,
    lay: &Layout,
    fs: f64,
    warnings: &mut Vec<String>,
) -> Vec<Annotation> {
    let kind = b.get(pos).copied().unwrap_or(0);
    let size = i32_at(b, pos + 1);
    let record = match kind {
        1 => 8,
        2 | 3 => 19,
        _ => {
            warnings.push(format!("unknown event table type {kind}: events left out"));
            return Vec::new();
        }
    };
    let from = pos + TEEG;
    let Ok(size) = usize::try_from(size) else {
        warnings.push(format!("the event table's size is {size}: events left out"));
        return Vec::new();
    };
    let table = &b[from.min(b.len())..from.saturating_add(size).min(b.len())];
    if !table.len().is_multiple_of(record) {
        warnings.push("the event table ends in a partial event: it is left out".into());
    }
    let start = (SETUP + ELECTLOC * channels) as i64;
    let row = (channels * lay.width) as i64;
    struct Ev {
        onset: f64,
        duration: f64,
        text: String,
        accept: u8,
    }
    let mut evs: Vec<Ev> = Vec::new();
    for r in table.chunks_exact(record).take(MAX_EVENTS) {
        let stim = u16::from_le_bytes([r[0], r[1]]);
        let (keyboard, keypad) = (r[2], r[3]);
        let mut offset = i32::from_le_bytes([r[4], r[5], r[6], r[7]]) as i64;
        if kind == 3 {
            offset *= row;
        }
        let sample = ((offset - start).div_euclid(row) - 1).max(0);
        let text = if keypad & 0x0f != 0 {
            format!("KeyPad Response {}", keypad & 0x0f)
        } else if keyboard != 0 {
            format!("Keyboard Response {keyboard}")
        } else {
            stim.to_string()
        };
        evs.push(Ev {
            onset: sample as f64 / fs,
            duration: 0.0,
            text,
            accept: keypad,
        });
    }
    if table.len() / record > MAX_EVENTS {
        warnings.push(format!(
            "more than {MAX_EVENTS} events: the rest are left out"
        ));
    }
    // MNE's `_update_bad_span_onset`: the accept/reject markers in turn, from the first
    // reject, pair up; each reject lasts to its partner and is marked BAD_.
    let (reject, accept) = (0xc0, 0xd0);
    let marks: Vec<usize> = (0..evs.len())
        .filter(|&i| evs[i].accept == reject || evs[i].accept == accept)
        .collect();
    if let Some(first) = marks.iter().position(|&i| evs[i].accept == reject) {
        let spans: Vec<Option<f64>> = (first..marks.len())
            .step_by(2)
            .map(|j| (marks.get(j + 1)).map(|&k| evs[k].onset - evs[marks[j]].onset))
            .collect();
        let mut spans = spans.into_iter();
        let mut unmatched = false;
        for e in evs.iter_mut().filter(|e| e.accept == reject) {
            match spans.next().flatten() {
                Some(d) => e.duration = d.max(0.0),
                None => unmatched = true,
            }
            e.text = format!("BAD_{}", e.text);
        }
        if unmatched {
            warnings.push("a rejected span has no end marker: it is kept as an event".into());
        }
        evs.retain(|e| e.accept != accept);
    }
    // MNE sorts by onset then duration, and crops to the data at microseconds.
    evs.sort_by(|a, b| {
        a.onset
            .total_cmp(&b.onset)
            .then(a.duration.total_cmp(&b.duration))
    });
    let end = micros(lay.samples as f64 / fs);
    let mut out = Vec::with_capacity(evs.len());
    for e in evs {
        let onset = micros(e.onset);
        if onset > end {
            continue;
        }
        let duration = if onset + micros(e.duration) > end {
            (end - onset) / 1e6
        } else {
            e.duration
        };
        out.push(Annotation {
            onset: onset / 1e6,
            duration,
            text: e.text,
        });
    }
    out
}

/// Seconds as whole microseconds, rounded as Python's `timedelta(seconds=...)` rounds.
fn micros(s: f64) -> f64 {
    let whole = s.trunc();
    whole * 1e6 + ((s - whole) * 1e6).round_ties_even()
}

/// MNE's `_topo_to_sphere`, in float32 as numpy computes it from the header's float32 x/y:
/// scaled by the largest radius, centred on the mean, mapped to -1..1 and lifted onto the
/// unit sphere. `None` where that is not finite (every electrode at 0, 0).
fn topo_to_sphere(xy: &[(f32, f32)]) -> Vec<Option<[f64; 3]>> {
    let mut xs: Vec<f32> = xy.iter().map(|p| p.0).collect();
    let mut ys: Vec<f32> = xy.iter().map(|p| p.1).collect();
    let sqs = (xs.iter().zip(&ys))
        .map(|(x, y)| (x * x + y * y).sqrt())
        .fold(f32::NEG_INFINITY, |m, r| {
            if r.is_nan() || m.is_nan() {
                f32::NAN
            } else {
                m.max(r)
            }
        });
    for v in xs.iter_mut().chain(ys.iter_mut()) {
        *v /= sqs;
    }
    // `np.mean`: the float32 sum over a count of type intp, so divided in float64.
    let mean = |v: &[f32]| (pairwise_sum(v) as f64 / v.len() as f64) as f32;
    let (cx, cy) = (0.5 - mean(&xs), 0.5 - mean(&ys));
    (xs.iter().zip(&ys))
        .map(|(&x, &y)| {
            let x = (x + cx) * 2.0 - 1.0;
            let y = (y + cy) * 2.0 - 1.0;
            let r = (x * x + y * y).sqrt().clamp(0.0, 1.0);
            let z = ((r as f64).acos() as f32 as f64).sin() as f32;
            let p = [x as f64, y as f64, z as f64];
            p.iter().all(|v| v.is_finite()).then_some(p)
        })
        .collect()
}

/// numpy's float32 sum (`pairwise_sum`: eight accumulators in blocks of up to 128, halves
/// above), which `np.mean` takes.
fn pairwise_sum(a: &[f32]) -> f32 {
    let n = a.len();
    if n < 8 {
        a.iter().fold(0.0, |s, &v| s + v)
    } else if n <= 128 {
        let mut r = [0f32; 8];
        r.copy_from_slice(&a[..8]);
        let whole = n - n % 8;
        for chunk in a[8..whole].chunks_exact(8) {
            for (acc, &v) in r.iter_mut().zip(chunk) {
                *acc += v;
            }
        }
        let res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        a[whole..].iter().fold(res, |s, &v| s + v)
    } else {
        let half = n / 2;
        let half = half - half % 8;
        pairwise_sum(&a[..half]) + pairwise_sum(&a[half..])
    }
}

/// The header's "mm/dd/yy HH:MM:SS" as Python's `strptime` reads it (one or two digits, a
/// space before a one-digit day, any whitespace between date and time, years 69-99 in the
/// 1900s and 00-68 in the 2000s), `None` where it does not.
fn parse_date(s: &str) -> Option<chrono::NaiveDateTime> {
    // Each field's two-character and one-character forms, as Python's regular expressions.
    type Form = fn(&[u8]) -> bool;
    let month: (Form, Form) = (
        |p| matches!(p, [b'1', b'0'..=b'2'] | [b'0', b'1'..=b'9']),
        |p| matches!(p, [b'1'..=b'9']),
    );
    let day: (Form, Form) = (
        |p| {
            matches!(
                p,
                [b'3', b'0' | b'1'] | [b'1' | b'2', b'0'..=b'9'] | [b'0' | b' ', b'1'..=b'9']
            )
        },
        |p| matches!(p, [b'1'..=b'9']),
    );
    let year: (Form, Form) = (|p| p.iter().all(|c| c.is_ascii_digit()), |_| false);
    let hour: (Form, Form) = (
        |p| matches!(p, [b'2', b'0'..=b'3'] | [b'0' | b'1', b'0'..=b'9']),
        |p| p[0].is_ascii_digit(),
    );
    let minute: (Form, Form) = (
        |p| matches!(p, [b'0'..=b'5', b'0'..=b'9']),
        |p| p[0].is_ascii_digit(),
    );
    let second: (Form, Form) = (
        |p| matches!(p, [b'6', b'0' | b'1'] | [b'0'..=b'5', b'0'..=b'9']),
        |p| p[0].is_ascii_digit(),
    );
    let mut b = s.as_bytes();
    let mut values = [0u32; 6];
    let fields = [month, day, year, hour, minute, second];
    let separators: [&[u8]; 5] = [b"/", b"/", b" ", b":", b":"];
    for (i, (two, one)) in fields.iter().enumerate() {
        // Two characters where they fit and the next separator follows, else one.
        let next_ok = |rest: &[u8]| match separators.get(i) {
            Some(&b" ") => rest.first().is_some_and(|&c| is_space(c)),
            Some(sep) => rest.starts_with(sep),
            None => rest.is_empty(),
        };
        let take = if b.len() >= 2 && two(&b[..2]) && next_ok(&b[2..]) {
            2
        } else if !b.is_empty() && one(&b[..1]) && next_ok(&b[1..]) {
            1
        } else {
            return None;
        };
        let digits: String = b[..take]
            .iter()
            .filter(|c| c.is_ascii_digit())
            .map(|&c| c as char)
            .collect();
        values[i] = digits.parse().ok()?;
        b = &b[take..];
        match separators.get(i) {
            Some(&b" ") => b = &b[b.iter().take_while(|&&c| is_space(c)).count()..],
            Some(sep) => b = &b[sep.len()..],
            None => {}
        }
    }
    let [m, dd, y, h, mi, sec] = values;
    let year = if y <= 68 { 2000 + y } else { 1900 + y };
    chrono::NaiveDate::from_ymd_opt(year as i32, m, dd)?.and_hms_opt(h, mi, sec)
}

/// Python's `\s` in ASCII.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t'..=b'\r' | 0x1c..=0x1f)
}

/// The mapped samples: sample `k` of channel `c` is stored number
/// `(k / block x channels + c) x block + k % block` after `offset`.
struct CntSource {
    map: Mmap,
    offset: usize,
    width: usize,
    channels: usize,
    block: usize,
    gains: Vec<f64>,
    zeros: Vec<f64>,
}

impl SampleSource for CntSource {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        let (gain, zero) = (self.gains[signal], self.zeros[signal]);
        for (k, o) in (start..).zip(out.iter_mut()) {
            let index = (k / self.block * self.channels + signal) * self.block + k % self.block;
            let at = self.offset + index * self.width;
            // The layout was checked against the file's size at opening.
            let value = match self.map.get(at..at + self.width) {
                Some(&[a, b]) => i16::from_le_bytes([a, b]) as f64,
                Some(&[a, b, c, d]) => i32::from_le_bytes([a, b, c, d]) as f64,
                _ => 0.0,
            };
            *o = ((value - zero) * gain) as f32;
        }
        Ok(())
    }

    fn release_pages(&self) {
        super::release_mapped_pages(&self.map);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CNT of two channels, `samples` int16 time points (channel 0: k, channel 1: -2k),
    /// channel 0 with baseline 1 and a calibration of 2 x 204.8 / 204.8 uV, and a type-1 event
    /// table with a stimulus at time point 2 and a reject/accept span.
    fn cnt(samples: usize, header_samples: i32) -> Vec<u8> {
        let mut b = vec![0u8; SETUP + 2 * ELECTLOC];
        b[..12].copy_from_slice(b"Version 3.0\0");
        b[121..126].copy_from_slice(b"Doe J");
        b[225..233].copy_from_slice(b"01/02/03");
        b[235..243].copy_from_slice(b"04:05:06");
        b[370..372].copy_from_slice(&2u16.to_le_bytes());
        b[376..378].copy_from_slice(&100u16.to_le_bytes());
        b[864..868].copy_from_slice(&header_samples.to_le_bytes());
        for (c, label) in [b"Fz\0".as_slice(), b"LONGNAME\0"].iter().enumerate() {
            let at = SETUP + ELECTLOC * c;
            b[at..at + label.len()].copy_from_slice(label);
            b[at + 19..at + 23].copy_from_slice(&(c as f32 - 0.5).to_le_bytes());
            b[at + 23..at + 27].copy_from_slice(&0.25f32.to_le_bytes());
            b[at + 47..at + 49].copy_from_slice(&(1 - c as i16).to_le_bytes());
            b[at + 59..at + 63].copy_from_slice(&204.8f32.to_le_bytes());
            b[at + 71..at + 75].copy_from_slice(&2f32.to_le_bytes());
        }
        for k in 0..samples as i16 {
            b.extend(k.to_le_bytes());
            b.extend((-2 * k).to_le_bytes());
        }
        let table = b.len() as i32;
        b[886..890].copy_from_slice(&table.to_le_bytes());
        b.push(1);
        b.extend(24i32.to_le_bytes());
        b.extend(0i32.to_le_bytes());
        let data = (SETUP + 2 * ELECTLOC) as i32;
        for (stim, keypad, point) in [(5u16, 0u8, 3), (0, 0xc0, 2), (0, 0xd0, 4)] {
            b.extend(stim.to_le_bytes());
            b.extend([0, keypad]);
            b.extend((data + point * 4).to_le_bytes());
        }
        b
    }

    fn write(bytes: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.cnt");
        std::fs::write(&path, bytes).unwrap();
        (dir, path)
    }

    #[test]
    fn a_minimal_file_reads_back() {
        let (_dir, path) = write(&cnt(6, 6));
        let rec = open(&path).unwrap();
        assert_eq!(rec.signals.len(), 2);
        assert_eq!(
            (rec.signals[0].label.as_str(), rec.signals[1].label.as_str()),
            ("Fz", "LONGNAME")
        );
        assert!(!rec.signals[1].bad, "byte 4 of a long label is no bad flag");
        assert_eq!(rec.signals[0].samples, 6);
        assert_eq!(rec.read_all(0).unwrap(), [-2.0, 0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(rec.read_all(1).unwrap()[3], -12.0);
        assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
        assert!(
            rec.recording_info
                .starts_with("int16 samples (from the header")
        );
        assert_eq!(rec.start.to_string(), "2003-01-02 04:05:06");
        assert_eq!(rec.patient, "Doe J");
        let got: Vec<(f64, &str)> = (rec.annotations.iter())
            .map(|a| (a.onset, a.text.as_str()))
            .collect();
        assert_eq!(got, [(0.01, "BAD_0"), (0.02, "5")]);
        assert!((rec.annotations[0].duration - 0.02).abs() < 1e-12);
        // x -0.5 and 0.5, y 0.25: spread to the unit circle's edge, centred.
        let p = rec.signals[0].position.unwrap();
        assert!((p[0] + 1.0 / 0.3125f64.sqrt()).abs() < 1e-6, "{p:?}");
        assert_eq!((p[1], p[2]), (0.0, 0.0));
    }

    #[test]
    fn an_unsaid_width_is_a_guess_said() {
        // No sample count; 8 time points of int16 are 4 of int32 as well.
        let (_dir, path) = write(&cnt(8, 0));
        let rec = open(&path).unwrap();
        assert_eq!(rec.signals[0].samples, 8);
        assert!(
            rec.recording_info.contains("a guess"),
            "{}",
            rec.recording_info
        );
        assert!(rec.warnings.iter().any(|w| w.contains("16 or 32-bit")));
        // 7 time points cannot be int32.
        let (_dir, path) = write(&cnt(7, 0));
        let rec = open(&path).unwrap();
        assert_eq!(rec.signals[0].samples, 7);
        assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);
    }

    #[test]
    fn truncated_or_foreign_files_are_errors() {
        let full = cnt(6, 6);
        for bad in [
            &full[..500],
            &full[..SETUP + 40],
            b"RIFF\0\0\0\0CNT ".as_slice(),
        ] {
            let (_dir, path) = write(bad);
            assert!(open(&path).is_err());
        }
        // A header whose sample count runs past the end of the file.
        let mut b = cnt(6, 6);
        b[886..890].copy_from_slice(&i32::MAX.to_le_bytes());
        b[864..868].copy_from_slice(&1_000_000i32.to_le_bytes());
        let (_dir, path) = write(&b);
        assert!(open(&path).is_err());
        assert!(sniff(b"Version 3.0\0") && !sniff(b"RIFF") && !sniff(b"Version x"));
    }

    #[test]
    fn dates_read_as_pythons_strptime() {
        let d = |s: &str| parse_date(s).map(|t| t.to_string());
        assert_eq!(
            d("05/10/99 17:35:31").as_deref(),
            Some("1999-05-10 17:35:31")
        );
        assert_eq!(d("5/ 3/68  7:5:9").as_deref(), Some("2068-05-03 07:05:09"));
        for bad in [
            "05/10/200 17:35:31",
            "13/01/01 00:00:00",
            "02/30/01 00:00:00",
            "01/01/01 24:00:00",
            "01/01/01 00:00:60",
            "01/01/01 00:00:00 ",
        ] {
            assert_eq!(d(bad), None, "{bad}");
        }
    }
}
