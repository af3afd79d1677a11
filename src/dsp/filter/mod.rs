//! Filters as typed: a Butterworth high-pass and low-pass of order 1-8 each, applied in
//! sequence, a Butterworth band-stop, and a mains notch (50 or 60 Hz, with its harmonics
//! below Nyquist), each as SciPy designs it (`butter(..., output='sos')`, `iirnotch`), run as
//! a cascade of second-order sections in one direction (causal, as clinical viewers draw) or
//! forward and backward (zero phase).
//!
//! A window is filtered with a margin of signal before it (and after it, for zero phase) long
//! enough for the filter's slowest pole to decay to `SETTLED`, the filter starting at the
//! steady state of its first sample: the window then equals filtering the whole signal
//! (`sosfilt` / `sosfiltfilt`) away from the signal's ends.

mod ecg;

use serde::{Deserialize, Serialize};

pub use ecg::{condition_ecg, median_filter};

/// The highest Butterworth order offered.
pub const MAX_ORDER: u8 = 8;

/// What a transient may leave of itself in a filtered window, relative to the step that
/// caused it.
const SETTLED: f64 = 1e-4;

/// The longest margin taken (about 68 min at 256 Hz): a filter that needs more is one nobody
/// reads a page through.
const MAX_MARGIN: usize = 1 << 20;

/// A filter as the user types it. Corners in Hz; orders are SciPy's `N`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DisplayFilter {
    /// High-pass corner.
    pub highpass: Option<f32>,
    pub highpass_order: u8,
    /// Low-pass corner.
    pub lowpass: Option<f32>,
    pub lowpass_order: u8,
    /// Band-stop edges.
    pub bandstop: Option<[f32; 2]>,
    pub bandstop_order: u8,
    /// Mains frequency to notch out (50 or 60 Hz).
    pub notch: Option<f32>,
    /// Notch the mains harmonics below Nyquist too.
    pub notch_harmonics: bool,
    /// The notch's quality factor (centre over -3 dB width).
    pub notch_q: f32,
    /// Forward and backward instead of forward only.
    pub zero_phase: bool,
}

impl Default for DisplayFilter {
    fn default() -> Self {
        DisplayFilter {
            highpass: None,
            highpass_order: 2,
            lowpass: None,
            lowpass_order: 2,
            bandstop: None,
            bandstop_order: 2,
            notch: None,
            notch_harmonics: true,
            notch_q: 30.0,
            zero_phase: false,
        }
    }
}

/// A filter that cannot be built at a rate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FilterError {
    #[error("{what} {hz} Hz is not between 0 and the Nyquist frequency {nyquist} Hz")]
    OutOfRange {
        what: &'static str,
        hz: f32,
        nyquist: f64,
    },
    #[error("{what} {hz} Hz: a corner must be above 0 Hz (leave it out for none)")]
    NotPositive { what: &'static str, hz: f32 },
    #[error("{0:?}: {1:?} is not a number")]
    NotANumber(String, String),
    #[error("{what}: order {order} is not between 1 and {MAX_ORDER}")]
    Order { what: &'static str, order: u8 },
    #[error("band-stop {0}-{1} Hz: the lower edge must be below the upper")]
    Band(f32, f32),
    #[error(
        "high-pass {0} Hz is at or above the low-pass {1} Hz: the band would pass nothing (a band-stop is bs=F1-F2)"
    )]
    EmptyBand(f32, f32),
    #[error("notch Q {0} must be above 0")]
    NotchQ(f32),
    #[error(
        "unknown filter setting {0:?} (hp=F, lp=F, order=N, hp-order=N, lp-order=N, bs=F1-F2, notch=50|60, q=Q, zero-phase, causal)"
    )]
    Unknown(String),
}

/// One second-order section, `a[0] = 1` (SciPy's `sos` row `[b0, b1, b2, 1, a1, a2]`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Section {
    pub b: [f64; 3],
    pub a: [f64; 3],
}

impl Section {
    /// Its gain at DC (what a constant input settles to), with `0/0` taken as 0.
    fn dc_gain(&self) -> f64 {
        let den: f64 = self.a.iter().sum();
        if den.abs() < 1e-300 {
            0.0
        } else {
            self.b.iter().sum::<f64>() / den
        }
    }

    /// The larger pole radius.
    fn pole_radius(&self) -> f64 {
        let (a1, a2) = (self.a[1], self.a[2]);
        let disc = a1 * a1 - 4.0 * a2;
        if disc < 0.0 {
            a2.abs().sqrt()
        } else {
            let s = disc.sqrt();
            ((-a1 + s) / 2.0).abs().max(((-a1 - s) / 2.0).abs())
        }
    }
}

impl DisplayFilter {
    pub fn is_active(&self) -> bool {
        self.highpass.is_some()
            || self.lowpass.is_some()
            || self.bandstop.is_some()
            || self.notch.is_some()
    }

    /// Refuses what no sampling rate can make: a corner at or below 0 Hz (or not a number), an
    /// order outside 1-`MAX_ORDER`, a high-pass at or above the low-pass, a band-stop upside
    /// down, a notch Q at or below 0. Settings a rate cannot make are `validate_at`'s.
    pub fn validate(&self) -> Result<(), FilterError> {
        let corner = |what: &'static str, hz: f32| {
            if hz.is_finite() && hz > 0.0 {
                Ok(())
            } else {
                Err(FilterError::NotPositive { what, hz })
            }
        };
        let order = |what: &'static str, order: u8| {
            if (1..=MAX_ORDER).contains(&order) {
                Ok(())
            } else {
                Err(FilterError::Order { what, order })
            }
        };
        if let Some(h) = self.highpass {
            corner("high-pass", h)?;
            order("high-pass", self.highpass_order)?;
        }
        if let Some(l) = self.lowpass {
            corner("low-pass", l)?;
            order("low-pass", self.lowpass_order)?;
        }
        if let (Some(h), Some(l)) = (self.highpass, self.lowpass)
            && h >= l
        {
            return Err(FilterError::EmptyBand(h, l));
        }
        if let Some([a, b]) = self.bandstop {
            corner("band-stop", a)?;
            corner("band-stop", b)?;
            order("band-stop", self.bandstop_order)?;
            if a >= b {
                return Err(FilterError::Band(a, b));
            }
        }
        if let Some(n) = self.notch {
            corner("notch", n)?;
            if !(self.notch_q.is_finite() && self.notch_q > 0.0) {
                return Err(FilterError::NotchQ(self.notch_q));
            }
        }
        Ok(())
    }

    /// `validate`, and every corner below the Nyquist frequency of rate `fs`.
    pub fn validate_at(&self, fs: f64) -> Result<(), FilterError> {
        self.validate()?;
        self.sections(fs).map(|_| ())
    }

    /// The cascade at rate `fs`: high-pass, low-pass, band-stop, notches.
    pub fn sections(&self, fs: f64) -> Result<Vec<Section>, FilterError> {
        let nyquist = fs / 2.0;
        let check = |what: &'static str, hz: f32| {
            if hz > 0.0 && (hz as f64) < nyquist {
                Ok(hz as f64)
            } else {
                Err(FilterError::OutOfRange { what, hz, nyquist })
            }
        };
        let order = |what: &'static str, order: u8| {
            if (1..=MAX_ORDER).contains(&order) {
                Ok(order as usize)
            } else {
                Err(FilterError::Order { what, order })
            }
        };
        use sci_rs::signal::filter::design::FilterBandType as Band;
        let mut out = Vec::new();
        if let Some(f) = self.highpass {
            let n = order("high-pass", self.highpass_order)?;
            out.extend(butter(n, vec![check("high-pass", f)?], Band::Highpass, fs));
        }
        if let Some(f) = self.lowpass {
            let n = order("low-pass", self.lowpass_order)?;
            out.extend(butter(n, vec![check("low-pass", f)?], Band::Lowpass, fs));
        }
        if let Some([lo, hi]) = self.bandstop {
            let n = order("band-stop", self.bandstop_order)?;
            let (lo_hz, hi_hz) = (check("band-stop", lo)?, check("band-stop", hi)?);
            if lo_hz >= hi_hz {
                return Err(FilterError::Band(lo, hi));
            }
            out.extend(butter(n, vec![lo_hz, hi_hz], Band::Bandstop, fs));
        }
        if let Some(f) = self.notch {
            let f0 = check("notch", f)?;
            let q = if self.notch_q > 0.0 {
                self.notch_q as f64
            } else {
                30.0
            };
            let last = if self.notch_harmonics { usize::MAX } else { 1 };
            // Harmonics whose notch would reach Nyquist are left out.
            for k in (1..=last).take_while(|&k| k as f64 * f0 * (1.0 + 1.0 / q) < nyquist) {
                out.push(notch(k as f64 * f0, q, fs));
            }
        }
        Ok(out)
    }

    /// The state machine for one trace at rate `fs`; a setting the rate cannot have (a corner
    /// at or above Nyquist) is left out, so that one filter serves channels of every rate.
    pub fn build(&self, fs: f64) -> FilterChain {
        let mut f = *self;
        let nyquist = (fs / 2.0) as f32;
        let fits = |hz: f32| hz > 0.0 && hz < nyquist;
        f.highpass = f.highpass.filter(|&h| fits(h));
        f.lowpass = f.lowpass.filter(|&h| fits(h));
        f.bandstop = f.bandstop.filter(|&[a, b]| fits(a) && fits(b) && a < b);
        f.notch = f.notch.filter(|&h| fits(h));
        f.highpass_order = f.highpass_order.clamp(1, MAX_ORDER);
        f.lowpass_order = f.lowpass_order.clamp(1, MAX_ORDER);
        f.bandstop_order = f.bandstop_order.clamp(1, MAX_ORDER);
        FilterChain::new(f.sections(fs).unwrap_or_default())
    }

    /// Samples of margin a window needs on each side it is filtered from (before it; after it
    /// too for zero phase) to equal filtering the whole signal.
    pub fn margin(&self, fs: f64) -> usize {
        self.build(fs).margin()
    }

    /// The margin in seconds at rate `fs`.
    pub fn warm_up_s(&self, fs: f64) -> f64 {
        self.margin(fs) as f64 / fs
    }

    /// Filters `x` in place: a window with `pre` samples of signal before it and `post` after
    /// it (`margin` of each, or fewer at the signal's ends). The window is `x[pre..len - post]`.
    pub fn apply(&self, fs: f64, x: &mut [f32]) {
        let mut chain = self.build(fs);
        chain.settle_on_first(x);
        chain.run(x);
        if self.zero_phase {
            x.reverse();
            chain.settle_on_first(x);
            chain.run(x);
            x.reverse();
        }
    }

    /// Parses `hp=1,lp=30,order=4,notch=50,zero-phase` (the `--filter` of `ede export`): `hp`,
    /// `lp` corners in Hz; `order` for both, `hp-order`, `lp-order`, `bs-order` for one;
    /// `bs=F1-F2` a band-stop; `notch=50|60` with harmonics (`notch-harmonics=no` for the
    /// fundamental alone) and `q`; `zero-phase` or `causal` (the default).
    pub fn parse(text: &str) -> Result<DisplayFilter, FilterError> {
        let mut f = DisplayFilter::default();
        let bad = |item: &str| FilterError::Unknown(item.to_string());
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            let key = key.trim().to_ascii_lowercase().replace('_', "-");
            let nan = || FilterError::NotANumber(item.to_string(), value.trim().to_string());
            let hz = || value.trim().parse::<f32>().map_err(|_| nan());
            let ord = || value.trim().parse::<u8>().map_err(|_| nan());
            match key.as_str() {
                "hp" | "highpass" | "high-pass" => f.highpass = Some(hz()?),
                "lp" | "lowpass" | "low-pass" => f.lowpass = Some(hz()?),
                "order" => {
                    let n = ord()?;
                    (f.highpass_order, f.lowpass_order, f.bandstop_order) = (n, n, n);
                }
                "hp-order" => f.highpass_order = ord()?,
                "lp-order" => f.lowpass_order = ord()?,
                "bs-order" => f.bandstop_order = ord()?,
                "bs" | "bandstop" | "band-stop" => {
                    let (a, b) = value.split_once(['-', ':']).ok_or_else(|| bad(item))?;
                    let edge = |v: &str| v.trim().parse::<f32>().map_err(|_| bad(item));
                    f.bandstop = Some([edge(a)?, edge(b)?]);
                }
                "notch" => f.notch = Some(hz()?),
                "notch-harmonics" => f.notch_harmonics = !matches!(value, "no" | "false" | "0"),
                "q" | "notch-q" => f.notch_q = hz()?,
                "zero-phase" | "zerophase" | "filtfilt" => f.zero_phase = true,
                "causal" => f.zero_phase = false,
                _ => return Err(bad(item)),
            }
        }
        f.validate()?;
        Ok(f)
    }

    /// What `parse` reads, for a status line, a session or a provenance record.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(h) = self.highpass {
            parts.push(format!("HP {} Hz (order {})", hz(h), self.highpass_order));
        }
        if let Some(l) = self.lowpass {
            parts.push(format!("LP {} Hz (order {})", hz(l), self.lowpass_order));
        }
        if let Some([a, b]) = self.bandstop {
            parts.push(format!(
                "BS {}-{} Hz (order {})",
                hz(a),
                hz(b),
                self.bandstop_order
            ));
        }
        if let Some(n) = self.notch {
            let h = if self.notch_harmonics {
                " + harmonics"
            } else {
                ""
            };
            parts.push(format!("notch {} Hz{h}", hz(n)));
        }
        if parts.is_empty() {
            return "no filter".into();
        }
        if self.zero_phase {
            parts.push("zero phase".into());
        }
        parts.join(", ")
    }
}

fn hz(v: f32) -> String {
    format!("{}", (v * 1000.0).round() / 1000.0)
}

/// SciPy's `butter(n, wn, band, fs=fs, output='sos')`.
/// Butterworth sections of order `n` (a band's prototype order: twice the poles), as SciPy's
/// `butter(n, wn, band, fs=fs, output="sos")`.
pub fn butter(
    n: usize,
    wn: Vec<f64>,
    band: sci_rs::signal::filter::design::FilterBandType,
    fs: f64,
) -> Vec<Section> {
    use sci_rs::signal::filter::design::{DigitalFilter, FilterOutputType, butter_dyn};
    match butter_dyn::<f64>(
        n,
        wn,
        Some(band),
        Some(false),
        Some(FilterOutputType::Sos),
        Some(fs),
    ) {
        DigitalFilter::Sos(s) => s
            .sos
            .iter()
            .map(|s| Section {
                b: s.b.map(|v| v / s.a[0]),
                a: s.a.map(|v| v / s.a[0]),
            })
            .collect(),
        _ => unreachable!("butter_dyn returns the output type it is asked for"),
    }
}

/// SciPy's `iirnotch(f0, q, fs)`: zeros on the unit circle at `f0`, -3 dB at `f0 (1 +- 1/2q)`.
fn notch(f0: f64, q: f64, fs: f64) -> Section {
    let w0 = 2.0 * std::f64::consts::PI * f0 / fs;
    let bw = w0 / q;
    let gain = 1.0 / (1.0 + (bw / 2.0).tan());
    Section {
        b: [gain, -2.0 * gain * w0.cos(), gain],
        a: [1.0, -2.0 * gain * w0.cos(), 2.0 * gain - 1.0],
    }
}

/// A cascade of sections with its state (transposed direct form II, as SciPy's `sosfilt`).
pub struct FilterChain {
    sections: Vec<Section>,
    state: Vec<[f64; 2]>,
}

impl FilterChain {
    pub fn new(sections: Vec<Section>) -> Self {
        let state = vec![[0.0; 2]; sections.len()];
        FilterChain { sections, state }
    }

    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    /// Filters in place, carrying state across calls (NaN gaps pass through as NaN without
    /// poisoning the state).
    pub fn run(&mut self, x: &mut [f32]) {
        if self.sections.is_empty() {
            return;
        }
        for v in x.iter_mut() {
            if !v.is_finite() {
                continue;
            }
            let mut y = *v as f64;
            for (s, z) in self.sections.iter().zip(&mut self.state) {
                let out = s.b[0] * y + z[0];
                z[0] = s.b[1] * y - s.a[1] * out + z[1];
                z[1] = s.b[2] * y - s.a[2] * out;
                y = out;
            }
            *v = y as f32;
        }
    }

    /// The state a constant input `level` settles to (SciPy's `sosfilt_zi * level`): starting
    /// there, a signal's offset causes no transient.
    pub fn settle(&mut self, level: f32) {
        let mut x = level as f64;
        for (s, z) in self.sections.iter().zip(&mut self.state) {
            let y = s.dc_gain() * x;
            z[1] = s.b[2] * x - s.a[2] * y;
            z[0] = y - s.b[0] * x;
            x = y;
        }
    }

    /// `settle` on the first finite sample of `x` (none: the state is cleared).
    pub fn settle_on_first(&mut self, x: &[f32]) {
        match x.iter().find(|v| v.is_finite()) {
            Some(&v) => self.settle(v),
            None => self.reset(),
        }
    }

    pub fn reset(&mut self) {
        self.state.iter_mut().for_each(|z| *z = [0.0; 2]);
    }

    /// Samples for the slowest pole to decay to `SETTLED`, with a fifth more for poles of
    /// several sections at one radius.
    pub fn margin(&self) -> usize {
        let r = self
            .sections
            .iter()
            .map(Section::pole_radius)
            .fold(0.0f64, f64::max);
        if r <= 0.0 {
            return 0;
        }
        if r >= 1.0 {
            return MAX_MARGIN;
        }
        ((1.2 * SETTLED.ln() / r.ln()).ceil() as usize).min(MAX_MARGIN)
    }
}

/// Runs `filter` forward then backward whatever its own `zero_phase` says (squared magnitude
/// response, no delay), each pass settled on its first value.
pub fn zero_phase(x: &mut [f32], fs: f64, filter: &DisplayFilter) {
    DisplayFilter {
        zero_phase: true,
        ..*filter
    }
    .apply(fs, x)
}

/// A second-order Butterworth low-pass at `corner` Hz, run with `zero_phase`.
pub fn zero_phase_lowpass(x: &mut [f32], fs: f64, corner: f32) {
    let filter = DisplayFilter {
        lowpass: Some(corner),
        ..Default::default()
    };
    zero_phase(x, fs, &filter);
}

#[cfg(test)]
mod tests;
