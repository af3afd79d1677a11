//! A reading session as a file: the recording, where the page is and how it is read (montage
//! and reference, filters, amplitudes, hidden and bad channels), the events when edited, and
//! the tab shown. File > Save session writes it; File > Open session, or reopening a file whose
//! last state the settings keep, puts it back.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Browser, MontageChoice};
use crate::app::unsaved::SavedEvent;
use crate::dsp::filter::DisplayFilter;
use crate::dsp::montage::{Montage, Reference};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Session {
    /// The recording's file (`None`: the demo).
    pub file: Option<PathBuf>,
    pub start_s: f64,
    pub span_s: f64,
    /// The montage itself, so that a session opens the same on another machine.
    pub montage: Montage,
    pub reference: Reference,
    pub filter: DisplayFilter,
    /// Channel types' own filters.
    pub type_filters: Vec<(crate::recording::ChannelType, DisplayFilter)>,
    /// Traces' own filters, by derivation label.
    pub channel_filters: Vec<(String, DisplayFilter)>,
    /// Every trace's amplitude multiplier.
    pub gain: f32,
    /// Traces' own amplitude multipliers (other than 1), by derivation label.
    pub channel_gains: Vec<(String, f32)>,
    /// Sensitivities and paper speed (the screen's own calibration stays this machine's).
    pub calibration: super::Calibration,
    /// Hidden traces, by derivation label.
    pub hidden: Vec<String>,
    /// Recorded channels marked bad, by label.
    pub bad: Vec<String>,
    /// Bad scalp electrodes drawn as their interpolation.
    pub interpolate_bads: bool,
    /// Every recorded channel's type, by label (the user may have changed some: that decides
    /// which are scalp electrodes in every average).
    pub types: Vec<(String, crate::recording::ChannelType)>,
    /// The events, where they were edited.
    pub events: Option<Vec<SavedEvent>>,
    /// "browser" or an analysis tab's id.
    pub tab: String,
    /// The analysis tabs' own parameters (those opened), by tab id.
    pub views: std::collections::BTreeMap<String, serde_json::Value>,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            file: None,
            start_s: 0.0,
            span_s: 10.0,
            montage: Montage {
                name: String::new(),
                derivations: Vec::new(),
            },
            reference: Reference::AsRecorded,
            filter: DisplayFilter::default(),
            type_filters: Vec::new(),
            channel_filters: Vec::new(),
            gain: 1.0,
            channel_gains: Vec::new(),
            calibration: super::Calibration::default(),
            hidden: Vec::new(),
            bad: Vec::new(),
            interpolate_bads: false,
            types: Vec::new(),
            events: None,
            tab: "browser".into(),
            views: Default::default(),
        }
    }
}

impl Session {
    pub fn load(path: &std::path::Path) -> Result<Session, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{}: not an ede session: {e}", path.display()))
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl Browser {
    /// The browser's state as a session (`tab` is the app's to fill in).
    pub fn session(&self) -> Session {
        let label = |d: usize| self.trace_label(d).to_string();
        let spec = &self.traces.spec;
        let mut channel_filters: Vec<(String, DisplayFilter)> = (spec.channel_filters.iter())
            .map(|(&d, &f)| (label(d), f))
            .collect();
        channel_filters.sort_by(|a, b| a.0.cmp(&b.0));
        let mut hidden: Vec<String> = self.lanes.hidden.iter().map(|&d| label(d)).collect();
        hidden.sort();
        Session {
            file: self.rec.path.clone(),
            start_s: self.t0,
            span_s: self.settings.span_s,
            montage: spec.montage.clone(),
            reference: spec.reference.clone(),
            filter: self.settings.filter,
            type_filters: self.settings.type_filters.clone(),
            channel_filters,
            gain: self.settings.gain,
            channel_gains: (self.channel_gain.iter().enumerate())
                .filter(|(_, g)| **g != 1.0)
                .map(|(d, &g)| (label(d), g))
                .collect(),
            calibration: self.settings.calibration,
            hidden,
            bad: (self.rec.signals.iter())
                .filter(|s| s.bad)
                .map(|s| s.label.clone())
                .collect(),
            interpolate_bads: self.rec.interpolate_bads,
            types: (self.rec.signals.iter())
                .map(|s| (s.label.clone(), s.kind))
                .collect(),
            events: crate::app::unsaved::edits_of(self).and_then(|e| e.events),
            tab: "browser".into(),
            views: Default::default(),
        }
    }

    /// Puts `session` back (its recording must be the one open): the montage joins the user's
    /// montages; what names a trace or channel this recording lacks is passed over.
    pub fn apply_session(&mut self, session: &Session) {
        for (label, kind) in &session.types {
            if let Some(c) = self.rec.signals.iter().position(|s| &s.label == label) {
                self.set_type(c, *kind);
            }
        }
        for c in 0..self.rec.signals.len() {
            let bad = session.bad.contains(&self.rec.signals[c].label);
            self.set_bad(c, bad);
        }
        self.set_interpolate_bads(session.interpolate_bads);
        self.settings.reference = session.reference.clone();
        self.settings.filter = session.filter;
        self.settings.type_filters = session.type_filters.clone();
        if session.montage.derivations.is_empty() {
            self.rebuild(true);
        } else {
            let builtin = crate::dsp::montage::BuiltIn::ALL
                .into_iter()
                .find(|b| b.name() == session.montage.name);
            match builtin {
                // A built-in montage is made anew for the recording, as the menu does.
                Some(b) => {
                    self.settings.montage = MontageChoice::BuiltIn(b);
                    self.rebuild(true);
                }
                None => self.add_user_montage(session.montage.clone()),
            }
        }
        let index: HashMap<String, usize> = (0..self.traces.spec.derivations.len())
            .map(|d| (self.trace_label(d).to_string(), d))
            .collect();
        let own: HashMap<usize, DisplayFilter> = (session.channel_filters.iter())
            .filter_map(|(l, f)| Some((*index.get(l)?, *f)))
            .collect();
        if !own.is_empty() {
            self.new_traces(own);
        }
        self.settings.gain = session.gain;
        self.settings.calibration = super::Calibration {
            points_per_mm: self.settings.calibration.points_per_mm,
            ..session.calibration
        };
        for (l, g) in &session.channel_gains {
            if let Some(&d) = index.get(l) {
                self.channel_gain[d] = *g;
            }
        }
        self.lanes.hidden = session
            .hidden
            .iter()
            .filter_map(|l| index.get(l).copied())
            .collect();
        if let Some(events) = &session.events {
            self.events
                .replace_all(events.iter().map(SavedEvent::annotation).collect());
        }
        self.show(session.start_s, Some(session.span_s));
    }
}
