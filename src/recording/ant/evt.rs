//! ANT's events: the `.evt` file libeep writes beside a recording and the `evt ` chunk's
//! triggers, placed and described as antio and MNE-Python do.

use super::*;

/// One trigger as antio hands it to MNE.
#[derive(Default)]
pub(super) struct Trigger {
    pub(super) code: String,
    pub(super) sample: i32,
    pub(super) duration: i32,
    pub(super) condition: Option<String>,
    pub(super) description: Option<String>,
    pub(super) impedance: bool,
}

/// A little-endian reader with C `fread` semantics: a short read leaves the value unset
/// and the file at its end.
pub(super) struct Fread<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Fread<'a> {
    /// The next `n` bytes, or as many as are left (the file is then at its end).
    fn upto(&mut self, n: usize) -> &'a [u8] {
        let (b, from) = (self.b, self.at);
        self.at = from.saturating_add(n).min(b.len());
        &b[from..self.at]
    }

    fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.upto(n);
        (s.len() == n).then_some(s)
    }

    fn num<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N).and_then(|s| s.try_into().ok())
    }

    fn i32(&mut self) -> Option<i32> {
        self.num().map(i32::from_le_bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        self.num().map(u32::from_le_bytes)
    }

    fn f64(&mut self) -> Option<f64> {
        self.num().map(f64::from_le_bytes)
    }

    /// libeep's string: a length in 1, 2, 4 or 8 bytes (each wider one flagged by the
    /// narrower's all-ones), then the bytes; `None` for length 0. C reads it up to a NUL.
    fn string(&mut self) -> Option<Vec<u8>> {
        let mut len = 0u64;
        if let Some([b]) = self.num::<1>() {
            len = b as u64;
            if b == 0xff
                && let Some(w) = self.num().map(u16::from_le_bytes)
            {
                len = w as u64;
                if w == 0xffff
                    && let Some(d) = self.u32()
                {
                    len = d as u64;
                    if d == u32::MAX
                        && let Some(q) = self.num().map(u64::from_le_bytes)
                    {
                        len = q;
                    }
                }
            }
        }
        if len == 0 {
            return None;
        }
        let s = self.upto(usize::try_from(len).unwrap_or(usize::MAX));
        Some(s.split(|&c| c == 0).next().unwrap_or(s).to_vec())
    }

    /// A UTF-16 string as libeep reads it: the low byte of each code unit.
    fn wstring(&mut self) -> Option<Vec<u8>> {
        let n = usize::try_from(self.i32()?).ok()?;
        let s = self.upto(n);
        let low: Vec<u8> = s.chunks(2).take(n / 2).map(|p| p[0]).collect();
        Some(low.split(|&c| c == 0).next().unwrap_or(&low).to_vec())
    }

    fn class(&mut self) -> Option<Vec<u8>> {
        (self.i32()? == -1).then(|| self.string()).flatten()
    }
}

/// An event of a `.evt` file, with the fields libeep keeps.
#[derive(Default)]
pub(super) struct EvtEvent {
    duration: f64,
    date: f64,
    fraction: f64,
    code: i32,
    condition: Option<Vec<u8>>,
    description: Option<Vec<u8>>,
    impedance: bool,
}

/// A descriptor's value (libeep's variant): its type, the integer `EventCode` takes, its
/// string, its count of floats (impedances) and its text as C's `printf` writes it.
#[derive(Default)]
pub(super) struct Variant {
    kind: u16,
    i32: i32,
    string: Option<Vec<u8>>,
    floats: u32,
    text: Option<String>,
}

pub(super) fn variant_base(r: &mut Fread) -> Variant {
    let mut v = Variant::default();
    let Some(kind) = r.num().map(u16::from_le_bytes) else {
        return v;
    };
    v.kind = kind;
    // C's `%f`, where not-a-number is "nan".
    let float = |x: f64| {
        if x.is_nan() {
            "nan".into()
        } else {
            format!("{x:.6}")
        }
    };
    v.text = match kind {
        2 => Some(r.num().map_or(0, i16::from_le_bytes).to_string()),
        3 => {
            v.i32 = r.i32().unwrap_or(0);
            Some(v.i32.to_string())
        }
        4 => Some(float(r.num().map_or(0.0, f32::from_le_bytes) as f64)),
        5 => Some(float(r.f64().unwrap_or(0.0))),
        8 => {
            v.string = r.wstring();
            let s = v.string.as_deref().unwrap_or(b"(null)");
            Some(String::from_utf8_lossy(s).into_owned())
        }
        19 => Some(r.u32().unwrap_or(0).to_string()),
        _ => None,
    };
    v
}

/// libeep's `_libeep_evt_read_variant`: arrays and references hold a second value, of which
/// libeep reads float arrays only.
pub(super) fn variant(r: &mut Fread) -> Variant {
    let mut v = variant_base(r);
    if !matches!(v.kind, 2..=5 | 8 | 11) && v.kind & 0x6000 != 0 && variant_base(r).kind == 4 {
        v.floats = r.u32().unwrap_or(0);
        r.upto((v.floats as usize).saturating_mul(4));
    }
    v
}

/// libeep's `_libeep_evt_event_process_variant`.
pub(super) fn take_variant(ev: &mut EvtEvent, name: Option<&[u8]>, v: Variant) {
    match name.unwrap_or(b"(null)") {
        b"EventCode" => ev.code = v.i32,
        b"Condition" if v.string.is_some() => ev.condition = v.string,
        b"Condition" | b"VideoFileName" => {}
        b"Impedance" => ev.impedance |= v.floats > 0,
        b"Name:" => ev.description = v.string,
        other => {
            // libeep appends an unset buffer for the types it does not print; ede nothing.
            let name = String::from_utf8_lossy(other);
            let text = v.text.map(|t| format!(" {name}={t}")).unwrap_or_default();
            let mut tmp = text.into_bytes();
            tmp.truncate(1023);
            ev.condition.get_or_insert_with(Vec::new).extend(tmp);
        }
    }
}

/// libeep's `_libeep_evt_read_event`: the part every event class shares.
pub(super) fn evt_event(r: &mut Fread, version: i32, ev: &mut EvtEvent) -> Option<()> {
    r.i32()?;
    r.bytes(16); // GUID
    r.class();
    r.string();
    if version >= 78 {
        r.string();
    }
    r.i32()?; // type
    r.i32()?; // state
    r.bytes(1)?;
    ev.duration = r.f64()?;
    r.f64()?;
    ev.date = r.f64()?;
    ev.fraction = r.f64()?;
    if version >= 19 {
        let n = r.i32()?;
        for _ in 0..n.max(0) {
            if r.at >= r.b.len() {
                break;
            }
            let name = r.string();
            let v = variant(r);
            r.string();
            take_variant(ev, name.as_deref(), v);
        }
    }
    Some(())
}

/// The events of a `.evt` file, in file order (libeep's `libeep_evt_read`).
pub(super) fn read_evt(b: &[u8]) -> Vec<EvtEvent> {
    let mut r = Fread { b, at: 0 };
    let mut out = Vec::new();
    let Some(head) = r.bytes(24) else {
        return out;
    };
    let version = i32::from_le_bytes([head[12], head[13], head[14], head[15]]);
    if r.class().as_deref() != Some(b"class dcEventsLibrary_c") {
        return out;
    }
    r.string();
    let n = r.u32().unwrap_or(0);
    for _ in 0..n {
        if r.at >= b.len() || out.len() >= MAX_EVENTS {
            break;
        }
        let mut ev = EvtEvent::default();
        let class = r.class();
        match class.as_deref().unwrap_or(b"") {
            b"class dcEpochEvent_c" => {
                evt_event(&mut r, version, &mut ev);
                if version < 33 {
                    r.i32();
                }
            }
            b"class dcEventMarker_c" | b"class dcArtefactEvent_c" => {
                evt_event(&mut r, version, &mut ev);
                // The channel and its reference.
                r.string();
                r.string();
                let marker = class.as_deref() == Some(b"class dcEventMarker_c");
                if marker || version >= 174 {
                    ev.description = r.string();
                }
                if marker && version >= 35 {
                    // Whether to show the amplitude and the duration.
                    r.upto(if version >= 103 { 5 } else { 2 });
                }
            }
            b"class dcSpikeEvent_c"
            | b"class dcSeizureEvent_c"
            | b"class dcSleepEvent_c"
            | b"class dcRPeakEvent_c" => {
                evt_event(&mut r, version, &mut ev);
            }
            _ => {}
        }
        out.push(ev);
    }
    out
}

/// Seconds since 1970 of an Excel date (libeep's `_libeep_helper_excel_to_double`).
pub(super) fn excel_seconds(date: f64, fraction: f64) -> f64 {
    if (27538.0..=2958464.0).contains(&date) {
        date * 3600.0 * 24.0 - 2209161600.0 + fraction
    } else {
        0.0
    }
}

/// The `.evt` events inside the recording, as libeep places them on samples.
pub(super) fn evt_triggers(
    events: Vec<EvtEvent>,
    start: (f64, f64),
    period: f64,
    samples: u64,
) -> Vec<Trigger> {
    let rate = 1.0 / period;
    let text = |b: Option<Vec<u8>>| b.map(|b| String::from_utf8_lossy(&b).into_owned());
    let mut out = Vec::new();
    for e in events {
        let diff = excel_seconds(e.date, e.fraction) - excel_seconds(start.0, start.1);
        let offset = (rate * diff) as u64;
        if !(e.date > 0.0 && e.date >= start.0 && diff >= 0.0 && offset < samples) {
            continue;
        }
        out.push(Trigger {
            code: e.code.to_string(),
            // antio passes both through a C int.
            sample: offset as u32 as i32,
            duration: (e.duration / period) as u64 as u32 as i32,
            condition: text(e.condition),
            description: text(e.description),
            impedance: e.impedance,
        });
    }
    out
}

/// The `evt ` chunk's triggers (libeep's `read_trigger_chunk`).
pub(super) fn chunk_triggers(b: &[u8], wide: bool) -> Vec<Trigger> {
    let size = if wide { 16 } else { 12 };
    let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
    for e in b.chunks_exact(size).take(MAX_EVENTS) {
        let (at, code) = e.split_at(size - 8);
        let sample = match at.try_into() {
            Ok(a) => u64::from_le_bytes(a),
            Err(_) => i32::from_le_bytes(at.try_into().unwrap_or([0; 4])) as u64,
        };
        let code = code.split(|&c| c == 0).next().unwrap_or(code).to_vec();
        // An early writer stored each DISCONT and DCRESET twice; libeep drops the copy.
        let twice =
            (out.last()).is_some_and(|l| l.0 == sample) && (code == b"1024" || code == b"2048");
        if !twice {
            out.push((sample, code));
        }
    }
    (out.into_iter())
        .map(|(sample, code)| Trigger {
            code: String::from_utf8_lossy(&code).into_owned(),
            sample: sample as u32 as i32,
            ..Trigger::default()
        })
        .collect()
}

/// MNE's `read_triggers` and `_prepare_annotations`: triggers to annotations, in samples.
pub(super) fn mne_annotations(triggers: Vec<Trigger>) -> Vec<(i64, i64, String)> {
    let mut out = Vec::new();
    let (mut off, mut on) = (Vec::new(), Vec::new());
    for t in triggers {
        let cond = t.condition.as_deref().map(str::to_lowercase);
        let desc_is = |w: &str| {
            t.description
                .as_deref()
                .is_some_and(|d| d.to_lowercase() == w)
        };
        if desc_is("impedance") && t.impedance {
            out.push((t.sample as i64, t.duration as i64, "impedance".to_string()));
        } else if cond.as_deref() == Some("amplifier disconnected") {
            off.push(t.sample as i64);
        } else if cond.as_deref() == Some("amplifier reconnected") {
            on.push(t.sample as i64);
        } else {
            let mut d = t.code;
            for part in [t.condition, t.description].into_iter().flatten() {
                d = format!("{d}/{part}");
            }
            out.push((t.sample as i64, t.duration as i64, d));
        }
    }
    for a in &mut out {
        if a.2.to_lowercase() == "impedance" {
            a.2 = "impedance".into();
        }
    }
    let paired =
        off.len() == on.len() && !off.is_empty() && off.iter().zip(&on).all(|(a, b)| b >= a);
    if paired {
        out.extend((off.iter().zip(&on)).map(|(&a, &b)| (a, b - a, "BAD_disconnection".into())));
    } else {
        out.extend(off.iter().map(|&a| (a, 0, "Amplifier disconnected".into())));
        out.extend(on.iter().map(|&a| (a, 0, "Amplifier reconnected".into())));
    }
    out
}
