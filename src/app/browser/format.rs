//! How the browser writes numbers: time-axis steps, times and spans, amplitudes and measured
//! values in the unit a reader expects, and filter frequencies.

/// 1, 2 or 5 times a power of ten, or a clock-friendly step for long spans.
pub(super) fn nice_step(raw: f64) -> f64 {
    for s in [
        60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 10800.0, 21600.0,
    ] {
        if raw > 30.0 && raw <= s {
            return s;
        }
    }
    if raw > 21600.0 {
        return 43200.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

/// `raw` rounded up to 1, 2 or 5 times a power of ten (amplitudes of any unit: uV, T).
pub(crate) fn nice_amplitude(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

pub(super) fn format_time(t: f64) -> String {
    if t.abs() >= 3600.0 {
        let s = t.round() as i64;
        format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    } else if t.abs() >= 60.0 {
        format!("{}:{:04.1}", (t / 60.0).floor() as i64, t % 60.0)
    } else {
        format!("{} s", (t * 100.0).round() / 100.0)
    }
}

pub(super) fn format_span(s: f64) -> String {
    if s >= 3600.0 {
        format!("{} h", (s / 3600.0 * 100.0).round() / 100.0)
    } else if s >= 60.0 {
        format!("{} min", (s / 60.0 * 100.0).round() / 100.0)
    } else {
        format!("{} s", (s * 100.0).round() / 100.0)
    }
}

/// A value in the unit a reader expects: MEG's tesla as femtotesla, T/m as fT/cm, EEG-sized
/// volts (FIF keeps EEG in V) as microvolts; the file and every computation keep SI units.
/// Every voltage from nV to mV an EEG-sized value shows is said in µV, one spelling whatever
/// the file wrote ("uV", "µV", BrainVision's nV).
pub(super) fn shown_in(v: f32, unit: &str) -> (f32, &str) {
    match unit.trim() {
        "T" => (v * 1e15, "fT"),
        "T/m" => (v * 1e13, "fT/cm"),
        "V" if v.abs() < 0.1 => (v * 1e6, "µV"),
        "mV" if v.abs() < 0.1 => (v * 1e3, "µV"),
        "nV" => (v * 1e-3, "µV"),
        "uV" | "µV" | "μV" => (v, "µV"),
        u => (v, u),
    }
}

/// A unit as the screen writes it: "µV" however a file or a JSON result spells it, "²" for
/// "^2" ("dB re 1 uV^2/Hz" reads "dB re 1 µV²/Hz").
pub fn unit_text(unit: &str) -> String {
    unit.replace("uV", "µV")
        .replace("μV", "µV")
        .replace("^2", "²")
}

pub(super) fn fmt_amp(v: f32) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// A measured value with four significant digits.
pub(super) fn fmt_value(v: f32) -> String {
    let a = v.abs();
    if a >= 1000.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{:.*}", 3 - a.log10().floor() as usize, v)
    } else {
        format!("{v:.4}")
    }
}

pub(super) fn hz(v: Option<f32>) -> String {
    v.map(|f| format!("{f} Hz")).unwrap_or_else(|| "off".into())
}
