//! The blink pipeline's parameters: every threshold of the detector and the removal, their
//! defaults, what they imply (window, hop, components removed) and their checks.

use serde::{Deserialize, Serialize};

use super::{BlinkError, dwt};

/// Whether confirmed components are removed over the blinks only or over the whole window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Blinks,
    Window,
}

/// Every threshold of the detector and the removal. Defaults in `Default`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BlinkParams {
    /// ICA window, seconds (10); lengthened to hold `samples_per_channel_sq` n^2 samples.
    pub window_s: f64,
    /// ICA needs samples in proportion to the square of the channel count (EEGLAB's rule of
    /// thumb asks for 20-30 n^2 over a whole recording). A window shorter than this many n^2
    /// samples is lengthened (2.5: 32 channels at 128 Hz get 20 s; 25 channels at 500 Hz
    /// keep the thesis's 10 s). 0 keeps `window_s` as it is.
    pub samples_per_channel_sq: f64,
    /// Where the eye's whole activity is removed (`remove_eye_movements`), windows hold at
    /// least this many n^2 samples (30, EEGLAB's rule of thumb for a whole recording): the
    /// eye's component, removed everywhere, must be told from frontal EEG, and a short window's
    /// carries more of it (the EEGLAB sample: 240 s windows leave 7.8 % of the blink-locked
    /// average on FPz and change O1/Oz/O2 by 1.9 % outside eye events, 120 s windows 8.1 % and
    /// 2.6 %, 60 s windows 11.4 % and 4.0 %).
    #[serde(default = "default_eye_samples_per_channel_sq")]
    pub eye_samples_per_channel_sq: f64,
    /// Step between windows, seconds; `None` for half a window.
    pub hop_s: Option<f64>,
    /// The blink band of the wavelet detector, Hz (1-8).
    pub band_hz: (f64, f64),
    /// Candidate threshold on the frontal derivations, in robust SDs (4).
    pub candidate_z: f64,
    /// Fraction of the derivations that must show a candidate (0.5).
    pub min_derivations: f64,
    /// Threshold on a component's frontal share, in its robust SDs (5).
    pub component_z: f64,
    /// Fraction of a component's own excursions that must be candidate blinks for it to be
    /// removed (0.5): a blink source's excursions are blinks, a rhythmic or noisy one's are
    /// not.
    pub min_match: f64,
    /// Fraction of a candidate's height the component must explain (0.5).
    pub min_share: f64,
    /// Fraction of a candidate's height a confirmed component must explain for the candidate
    /// to be one of its blinks (0.35): once the window's blink source is known, a small blink
    /// it carries is a blink though the EEG around it makes up more of its height (simulated
    /// 50 uV blinks: F1 0.94/0.95/0.94 at 0.5, 0.97/0.95/0.96 at 0.35 and 0.25).
    #[serde(default = "default_confirmed_share")]
    pub confirmed_share: f64,
    /// Excursions of a confirmed component lower than this fraction of its typical (median)
    /// blink height are not blinks (0.4).
    pub min_relative_height: f64,
    /// At most this many components are removed per window (3).
    pub max_components: usize,
    /// Peaks this close (s) are one event; also the hit tolerance of matching (0.15).
    pub hit_s: f64,
    /// Peaks closer than this (s) are one blink (0.3).
    pub min_separation_s: f64,
    /// A blink's extent: where its band-passed height falls below this fraction (0.2).
    pub extent: f64,
    /// Added to each side of a blink's extent before removal, seconds (0.1).
    pub margin_s: f64,
    /// Raised-cosine fade at each side of the removal, seconds (0.1).
    pub taper_s: f64,
    /// The blink source is low-passed at this corner before it is subtracted under the blinks,
    /// Hz (24; 0 or a corner at or above Nyquist: not filtered; `removal::lowpassed` says
    /// why).
    #[serde(default = "default_source_lowpass_hz")]
    pub source_lowpass_hz: f64,
    pub scope: Scope,
    /// On a stream, a component whose topography is this close (|cos| of the mixing columns)
    /// to one removed in the previous window is the same blink source and is removed without
    /// the `min_match` test (0.95): a window whose few blinks sit badly for the candidate
    /// detector does not let them through.
    #[serde(default = "default_track_cos")]
    pub track_cos: f64,
    /// Remove the eye's whole activity, not only blinks (false): the window's eye component
    /// (the one that carries the most blinks, eye movements and closures) is removed
    /// everywhere, with its movements, closures and slow drifts, from an ICA of the cleaned
    /// channels alone over long windows (`eye_samples_per_channel_sq`), as MNE-Python and
    /// EEGLAB users remove an ocular component. The kept EOG channels still show the eyes.
    #[serde(default)]
    pub remove_eye_movements: bool,
}

fn default_source_lowpass_hz() -> f64 {
    BlinkParams::default().source_lowpass_hz
}

fn default_track_cos() -> f64 {
    BlinkParams::default().track_cos
}

fn default_confirmed_share() -> f64 {
    BlinkParams::default().confirmed_share
}

fn default_eye_samples_per_channel_sq() -> f64 {
    BlinkParams::default().eye_samples_per_channel_sq
}

impl Default for BlinkParams {
    fn default() -> Self {
        BlinkParams {
            window_s: 10.0,
            samples_per_channel_sq: 2.5,
            eye_samples_per_channel_sq: 30.0,
            hop_s: None,
            band_hz: (1.0, 8.0),
            candidate_z: 4.0,
            min_derivations: 0.5,
            component_z: 5.0,
            min_match: 0.5,
            min_share: 0.5,
            confirmed_share: 0.35,
            min_relative_height: 0.4,
            max_components: 3,
            hit_s: 0.15,
            min_separation_s: 0.3,
            extent: 0.2,
            margin_s: 0.1,
            taper_s: 0.1,
            source_lowpass_hz: 24.0,
            scope: Scope::Blinks,
            track_cos: 0.95,
            remove_eye_movements: false,
        }
    }
}

impl BlinkParams {
    /// Whether the removed components go over the whole window (the eye's whole activity, or
    /// `Scope::Window`) rather than under the blinks' mask.
    pub fn removes_everywhere(&self) -> bool {
        self.scope == Scope::Window || self.remove_eye_movements
    }

    /// The window in samples for `channels` channels at `fs`, never longer than `total`
    /// samples unless `window_s` itself is.
    pub fn window_samples(&self, channels: usize, fs: f64, total: usize) -> usize {
        let asked = (self.window_s * fs).round() as usize;
        let per_sq = match self.remove_eye_movements {
            true => self
                .samples_per_channel_sq
                .max(self.eye_samples_per_channel_sq),
            false => self.samples_per_channel_sq,
        };
        let needed = (per_sq * (channels * channels) as f64).ceil() as usize;
        asked.max(needed.min(total))
    }

    /// How many components a window removes at most: `max_components`, and one where the
    /// eye's whole activity goes (the eye is one component of an ICA without the EOG
    /// channels; a second one confirmed beside it carried posterior EEG on the EEGLAB sample,
    /// and removed everywhere it changed O1/Oz/O2 by 19-30 %).
    pub fn components_removed(&self) -> usize {
        match self.remove_eye_movements {
            true => self.max_components.min(1),
            false => self.max_components,
        }
    }

    /// The hop in samples for a window of `window` samples.
    pub fn hop_samples(&self, window: usize, fs: f64) -> usize {
        match self.hop_s {
            Some(h) => ((h * fs).round() as usize).clamp(1, window.max(1)),
            None => (window / 2).max(1),
        }
    }

    pub fn validate(&self, fs: f64) -> Result<(), BlinkError> {
        let bad = |m: String| Err(BlinkError::Params(m));
        if self.window_s * fs < 64.0 || !self.window_s.is_finite() {
            return bad(format!(
                "the window must hold at least 64 samples ({:.2} s at {fs} Hz), got {} s",
                64.0 / fs,
                self.window_s
            ));
        }
        if let Some(hop) = self.hop_s
            && !(hop > 0.0 && hop <= self.window_s)
        {
            return bad(format!("the hop must be in (0, window], got {hop} s"));
        }
        for v in [self.samples_per_channel_sq, self.eye_samples_per_channel_sq] {
            if !(0.0..=1e3).contains(&v) {
                return bad(format!(
                    "samples per channel squared must be within 0..1000, got {v}"
                ));
            }
        }
        let (lo, hi) = self.band_hz;
        if dwt::levels_in_band(fs, (lo, hi)).is_empty() {
            return bad(format!(
                "the band {lo}-{hi} Hz holds no wavelet level at {fs} Hz (centres at 0.75 fs/2^j)"
            ));
        }
        for (name, v) in [
            ("candidate threshold", self.candidate_z),
            ("component threshold", self.component_z),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                return bad(format!("the {name} must be positive, got {v}"));
            }
        }
        for (name, v) in [
            ("fraction of derivations", self.min_derivations),
            ("match fraction", self.min_match),
            ("share", self.min_share),
            ("share of a confirmed component", self.confirmed_share),
            ("relative height", self.min_relative_height),
            ("extent", self.extent),
            ("tracking similarity", self.track_cos),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(format!("the {name} must be within 0..1, got {v}"));
            }
        }
        if !(self.source_lowpass_hz >= 0.0 && self.source_lowpass_hz.is_finite()) {
            return bad(format!(
                "the source's low-pass must be 0 (none) or a corner in Hz, got {}",
                self.source_lowpass_hz
            ));
        }
        for (name, v) in [
            ("hit tolerance", self.hit_s),
            ("separation", self.min_separation_s),
            ("margin", self.margin_s),
            ("taper", self.taper_s),
        ] {
            if !(v >= 0.0 && v < self.window_s) {
                return bad(format!("the {name} must be within 0..window, got {v} s"));
            }
        }
        Ok(())
    }
}
