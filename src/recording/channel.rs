//! What a signal measures: its channel type, from the format where it has one (FIF's kind,
//! EEGLAB's `type`, BIDS' `_channels.tsv`) and from the label otherwise.

use serde::{Deserialize, Serialize};

/// A signal's channel type, named as MNE-Python names them (`ede info --json` writes these).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChannelType {
    #[default]
    Eeg,
    /// MEG magnetometer (T).
    Mag,
    /// MEG gradiometer (T/m).
    Grad,
    /// MEG reference sensor (4D/BTi, CTF): noise, not brain.
    RefMeg,
    Eog,
    Ecg,
    Emg,
    /// Trigger or status channel: its steps are events.
    Stim,
    Resp,
    Misc,
}

impl ChannelType {
    /// Every type, in the order the browser groups them.
    pub const ALL: [ChannelType; 10] = [
        ChannelType::Mag,
        ChannelType::Grad,
        ChannelType::RefMeg,
        ChannelType::Eeg,
        ChannelType::Eog,
        ChannelType::Ecg,
        ChannelType::Emg,
        ChannelType::Resp,
        ChannelType::Stim,
        ChannelType::Misc,
    ];

    /// The name a user reads (menus, groups, `ede info`).
    pub fn name(self) -> &'static str {
        match self {
            ChannelType::Eeg => "EEG",
            ChannelType::Mag => "MEG mag",
            ChannelType::Grad => "MEG grad",
            ChannelType::RefMeg => "MEG ref",
            ChannelType::Eog => "EOG",
            ChannelType::Ecg => "ECG",
            ChannelType::Emg => "EMG",
            ChannelType::Stim => "Stim",
            ChannelType::Resp => "Resp",
            ChannelType::Misc => "Misc",
        }
    }

    /// The type's name in MNE-Python (`mne.io.RawArray`'s `ch_types`).
    pub fn mne_name(self) -> &'static str {
        match self {
            ChannelType::Eeg => "eeg",
            ChannelType::Mag => "mag",
            ChannelType::Grad => "grad",
            ChannelType::RefMeg => "ref_meg",
            ChannelType::Eog => "eog",
            ChannelType::Ecg => "ecg",
            ChannelType::Emg => "emg",
            ChannelType::Stim => "stim",
            ChannelType::Resp => "resp",
            ChannelType::Misc => "misc",
        }
    }

    /// The type of MNE-Python's name for it (`None` for types ede does not tell apart).
    pub fn from_mne_name(name: &str) -> Option<ChannelType> {
        ChannelType::ALL.into_iter().find(|t| t.mne_name() == name)
    }

    /// The type's name in BIDS' `channels.tsv`.
    pub fn bids_name(self) -> &'static str {
        match self {
            ChannelType::Eeg => "EEG",
            ChannelType::Mag => "MEGMAG",
            ChannelType::Grad => "MEGGRADPLANAR",
            ChannelType::RefMeg => "MEGREFMAG",
            ChannelType::Eog => "EOG",
            ChannelType::Ecg => "ECG",
            ChannelType::Emg => "EMG",
            ChannelType::Stim => "TRIG",
            ChannelType::Resp => "RESP",
            ChannelType::Misc => "MISC",
        }
    }

    /// Brain signals: what Cross-ApEn, scalograms and ICA take by default.
    pub fn is_brain(self) -> bool {
        matches!(
            self,
            ChannelType::Eeg | ChannelType::Mag | ChannelType::Grad
        )
    }

    /// A type named by a file or a user: MNE's names (eeg, mag, grad, ref_meg, eog, ecg, emg,
    /// stim, resp, misc), BIDS' `_channels.tsv` types (EEG, MEGMAG, MEGGRADPLANAR, VEOG, TRIG,
    /// ...) and EEGLAB's free-text `type` field. `None` for a name that says nothing known.
    pub fn parse(name: &str) -> Option<ChannelType> {
        let n: String = (name.trim().to_ascii_uppercase().chars())
            .filter(|c| c.is_ascii_alphanumeric())
            .collect();
        Some(match n.as_str() {
            "EEG" | "SEEG" | "ECOG" | "DBS" => ChannelType::Eeg,
            "MAG" | "MEGMAG" | "MEG" | "MEGGRADAXIAL" => ChannelType::Mag,
            "GRAD" | "MEGGRADPLANAR" | "PLANAR" => ChannelType::Grad,
            "REFMEG" | "MEGREFMAG" | "MEGREFGRADAXIAL" | "MEGREFGRADPLANAR" | "MEGOTHER" => {
                ChannelType::RefMeg
            }
            "EOG" | "VEOG" | "HEOG" => ChannelType::Eog,
            "ECG" | "EKG" => ChannelType::Ecg,
            "EMG" => ChannelType::Emg,
            "STIM" | "TRIG" | "TRIGGER" | "STATUS" | "EVENT" => ChannelType::Stim,
            "RESP" => ChannelType::Resp,
            "MISC" | "OTHER" | "AUDIO" | "TEMP" | "GSR" | "PPG" | "SYSCLOCK" | "HEADSHAPE" => {
                ChannelType::Misc
            }
            _ => return None,
        })
    }

    /// The type a label says, for formats that keep none: EDF+'s type prefix ("EEG Fp1-Ref",
    /// "ECG ECG1"), then names (EOG1, VEOG, LOC; ECG, MLII, V5; EMG, Chin; Status, STI 014,
    /// Trigger; Resp, Thor, Flow; SpO2, Temp, acc). Otherwise EEG where the unit is a voltage
    /// (or unsaid), and miscellaneous where it is not (G, %, degC).
    pub fn from_label(label: &str, unit: &str) -> ChannelType {
        let up = label.trim().to_ascii_uppercase();
        if let Some((prefix, rest)) = up.split_once(' ') {
            if let Some(t) = edf_plus_prefix(prefix) {
                // A gradient unit (fT/cm, T/m) tells gradiometers from magnetometers.
                return match t {
                    ChannelType::Mag if unit.contains('/') => ChannelType::Grad,
                    t => t,
                };
            }
            if prefix == "POL" {
                // Nihon Kohden's polygraph prefix says nothing: the rest may.
                return ChannelType::from_label(rest, unit);
            }
        }
        if let Some(t) = by_name(&up) {
            return t;
        }
        if is_voltage(unit) {
            ChannelType::Eeg
        } else {
            ChannelType::Misc
        }
    }
}

/// LSL's unit names ("microvolts", which XDF files keep too) as EDF writes them ("uV").
pub fn unit_from_lsl(unit: &str) -> String {
    match unit.trim().to_ascii_lowercase().as_str() {
        "microvolts" | "microvolt" => "uV".into(),
        "millivolts" | "millivolt" => "mV".into(),
        "volts" | "volt" => "V".into(),
        "µv" | "μv" => "uV".into(),
        _ => unit.trim().into(),
    }
}

/// EDF+'s standard signal types (the specification's table), as label prefixes.
fn edf_plus_prefix(prefix: &str) -> Option<ChannelType> {
    Some(match prefix {
        "EEG" => ChannelType::Eeg,
        "ECG" | "EKG" => ChannelType::Ecg,
        "EOG" => ChannelType::Eog,
        "EMG" => ChannelType::Emg,
        "MEG" => ChannelType::Mag,
        "RESP" => ChannelType::Resp,
        "EVENT" => ChannelType::Stim,
        "ERG" | "EP" | "TEMP" | "SAO2" | "SPO2" | "LIGHT" | "SOUND" | "POS" | "VOL" | "MCG" => {
            ChannelType::Misc
        }
        _ => return None,
    })
}

fn by_name(up: &str) -> Option<ChannelType> {
    const LEADS: [&str; 13] = [
        "MLII", "I", "II", "III", "AVR", "AVL", "AVF", "V1", "V2", "V3", "V4", "V5", "V6",
    ];
    let starts = |words: &[&str]| words.iter().any(|w| up.starts_with(w));
    Some(if is_eog(up) {
        ChannelType::Eog
    } else if up.contains("ECG") || up.contains("EKG") || LEADS.contains(&up) {
        ChannelType::Ecg
    } else if up.contains("EMG") || starts(&["CHIN"]) {
        ChannelType::Emg
    } else if starts(&["STATUS", "TRIG", "STI ", "STI0", "STI1", "MARKER"]) || up == "STI" {
        ChannelType::Stim
    } else if starts(&["RESP", "THOR", "ABDO", "ABD ", "FLOW", "AIRFLOW", "NASAL"]) {
        ChannelType::Resp
    } else if is_dc_input(up)
        || starts(&[
            "SAO2", "SPO2", "PLETH", "PULSE", "TEMP", "ACC", "LIGHT", "BODY", "POSITION", "GSR",
            "EDA", "MISC", "PHOTIC", "ANNOT",
        ])
    {
        ChannelType::Misc
    } else {
        return None;
    })
}

/// A DC input of a clinical amplifier ("DC01", Nihon Kohden's "POL DC03"): a transducer's
/// slow voltage (oximetry, pressure), never an electrode on the head.
fn is_dc_input(up: &str) -> bool {
    up.strip_prefix("DC")
        .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// Volts per unit of a voltage unit (`None` for others).
pub fn volts_per_unit(unit: &str) -> Option<f64> {
    Some(match unit.trim() {
        "uV" | "µV" | "μV" | "microvolt" => 1e-6,
        "mV" => 1e-3,
        "V" => 1.0,
        "nV" => 1e-9,
        _ => return None,
    })
}

/// The SI unit of `unit` and how many of it one `unit` is (V, T, T/m); `None` for units that
/// are not a voltage or a magnetic field (left as they are).
pub fn si_per_unit(unit: &str) -> Option<(&'static str, f64)> {
    if let Some(v) = volts_per_unit(unit) {
        return Some(("V", v));
    }
    Some(match unit.trim() {
        "T" => ("T", 1.0),
        "pT" => ("T", 1e-12),
        "fT" => ("T", 1e-15),
        "T/m" => ("T/m", 1.0),
        "fT/cm" => ("T/m", 1e-13),
        "fT/m" => ("T/m", 1e-15),
        _ => return None,
    })
}

/// The unit a reader reads a signal in, and how many of it one `unit` is: every voltage in
/// microvolts ("uV"), magnetic fields in fT, gradients in fT/cm; other units as they are.
/// Spectra and trends are in these, so that the same EEG from a FIF (V) and an EDF (uV) reads
/// the same dB.
pub fn reading_unit(unit: &str) -> (String, f64) {
    match si_per_unit(unit) {
        Some(("V", k)) => ("uV".into(), k / 1e-6),
        Some(("T", k)) => ("fT".into(), k / 1e-15),
        Some(("T/m", k)) => ("fT/cm".into(), k / 1e-13),
        _ => (unit.trim().to_string(), 1.0),
    }
}

fn is_voltage(unit: &str) -> bool {
    let u = unit.trim();
    u.is_empty() || ["V", "mV", "uV", "µV", "μV", "nV"].contains(&u)
}

/// An EOG channel by its label: "EOG" anywhere (EOG1, VEOG, HEOG, EDF+'s "EOG Fp1-..." type
/// prefix), Neuroscan's VEO/HEO, and the sleep montages' LOC/ROC.
pub fn is_eog(label: &str) -> bool {
    let l = label.trim().to_ascii_uppercase();
    l.contains("EOG") || ["VEO", "HEO", "LOC", "ROC"].contains(&l.as_str())
}

/// A nominal range where the file states none that means anything (float samples).
pub(crate) fn nominal_range(unit: &str) -> (f64, f64) {
    match unit {
        "V" => (-3.2e-3, 3.2e-3),
        "uV" | "µV" => (-3200.0, 3200.0),
        "T" => (-5e-11, 5e-11),
        "T/m" => (-5e-9, 5e-9),
        _ => (-1.0, 1.0),
    }
}

#[cfg(test)]
mod tests {
    use super::ChannelType::*;
    use super::*;

    #[test]
    fn mne_names_name_one_type_each() {
        for t in ChannelType::ALL {
            assert_eq!(ChannelType::from_mne_name(t.mne_name()), Some(t));
        }
        assert_eq!(ChannelType::from_mne_name("chpi"), None);
    }

    #[test]
    fn labels_say_their_type() {
        let cases = [
            ("EEG Fp1-Ref", "uV", Eeg),
            ("ECG ECG1", "uV", Ecg),
            ("POL E", "uV", Eeg),
            ("POL DC01", "uV", Misc),
            ("DC12", "mV", Misc),
            ("DCx", "uV", Eeg),
            ("SaO2 X9", "uV", Misc),
            ("EOG1", "uV", Eog),
            ("VEOG", "uV", Eog),
            ("LOC", "uV", Eog),
            ("MLII", "mV", Ecg),
            ("V5", "mV", Ecg),
            ("EMG", "uV", Emg),
            ("Chin1", "uV", Emg),
            ("Status", "", Stim),
            ("STI 014", "V", Stim),
            ("Trigger", "uV", Stim),
            ("Resp oro-nasal", "", Resp),
            ("acc1", "G", Misc),
            ("Fz", "uV", Eeg),
            ("squarewave", "uV", Eeg),
            ("Temp rectal", "degC", Misc),
            ("Light", "lux", Misc),
            ("MEG 0111", "fT", Mag),
            ("MEG 0112", "fT/cm", Grad),
        ];
        for (label, unit, want) in cases {
            assert_eq!(ChannelType::from_label(label, unit), want, "{label}");
        }
    }

    #[test]
    fn readers_units_are_one_per_quantity() {
        for (unit, reading, k) in [
            ("V", "uV", 1e6),
            ("mV", "uV", 1e3),
            ("µV", "uV", 1.0),
            ("nV", "uV", 1e-3),
            ("T", "fT", 1e15),
            ("T/m", "fT/cm", 1e13),
        ] {
            let (u, got) = reading_unit(unit);
            assert_eq!(u, reading);
            assert!((got / k - 1.0).abs() < 1e-12, "{unit}: {got}");
        }
        assert_eq!(reading_unit("%"), ("%".to_string(), 1.0));
    }

    #[test]
    fn type_names_of_files_parse() {
        assert_eq!(ChannelType::parse("MEGGRADPLANAR"), Some(Grad));
        assert_eq!(ChannelType::parse("ref_meg"), Some(RefMeg));
        assert_eq!(ChannelType::parse("VEOG"), Some(Eog));
        assert_eq!(ChannelType::parse("TRIG"), Some(Stim));
        assert_eq!(ChannelType::parse("eeg"), Some(Eeg));
        assert_eq!(ChannelType::parse("scalp"), None);
    }
}
