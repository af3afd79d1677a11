//! Electrode knowledge: 10-20/10-10 names in the labels files use, and where those electrodes
//! sit on an idealized head. Readers use it (4D's EEG pairs), and so do montages and scalp maps.

/// The electrode name of a label: "EEG Fp1-Ref" → "FP1"; 10-10 names map to 10-20 (T7 → T3,
/// T8 → T4, P7 → T5, P8 → T6); "Fc5." style trailing dots are dropped.
pub fn electrode_name(label: &str) -> String {
    let mut s = label.trim().to_ascii_uppercase();
    for prefix in ["EEG ", "EEG:"] {
        if let Some(rest) = s.strip_prefix(prefix) {
            s = rest.trim().to_string();
        }
    }
    for suffix in ["-REF", "-LE", "-AVG", "-A1", "-A2", "-M1", "-M2"] {
        if let Some(rest) = s.strip_suffix(suffix) {
            s = rest.to_string();
        }
    }
    let s = s.trim_end_matches('.').to_string();
    match s.as_str() {
        "T7" => "T3".into(),
        "T8" => "T4".into(),
        "P7" => "T5".into(),
        "P8" => "T6".into(),
        _ => s,
    }
}

/// The electrode positions ede ships (assets/electrodes_1010.tsv: an idealized spherical
/// 10-10 model, unit sphere, x right, y front, z up).
const ELECTRODES: &str = include_str!("../../assets/electrodes_1010.tsv");

/// Where a channel's electrode sits, from its label's 10-20/10-10 name; `None` for labels that
/// name no scalp position (EOG, ECG, unknown names).
pub fn electrode_position(label: &str) -> Option<[f64; 3]> {
    let want = electrode_name(label);
    ELECTRODES
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let mut f = line.split('\t');
            let name = f.next()?;
            if electrode_name(name) != want {
                return None;
            }
            let mut xyz = [0.0; 3];
            for v in &mut xyz {
                *v = f.next()?.trim().parse().ok()?;
            }
            Some(xyz)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn electrode_names_normalise() {
        assert_eq!(electrode_name("EEG Fp1-Ref"), "FP1");
        assert_eq!(electrode_name("T7"), "T3");
        assert_eq!(electrode_name("Fc5."), "FC5");
        let fp1 = electrode_position("EEG Fp1-Ref").unwrap();
        assert!(fp1[1] > 0.9 && fp1[0] < 0.0, "{fp1:?}");
        assert_eq!(electrode_position("P7"), electrode_position("T5"));
        assert!(electrode_position("EOG1").is_none());
    }
}
