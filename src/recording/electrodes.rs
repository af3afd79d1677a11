//! Electrode knowledge: 10-20/10-10 names in the labels files use, and where those electrodes
//! sit on an idealized head. Readers use it (4D's EEG pairs), and so do montages and scalp maps.

/// The electrode a label names, in the file's own spelling: "EEG Fp1-Ref" → "Fp1", "Fc5." →
/// "Fc5" (EDF+'s type prefix, the reference suffixes -Ref, -REF, -LE, -AV, -AVG, -A1, -A2, -M1,
/// -M2 and trailing dots dropped).
pub fn electrode_label(label: &str) -> &str {
    let mut s = label.trim();
    for prefix in ["EEG ", "EEG:"] {
        if s.len() > prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix) {
            s = s[prefix.len()..].trim();
        }
    }
    for suffix in ["-REF", "-LE", "-AV", "-AVG", "-A1", "-A2", "-M1", "-M2"] {
        let n = s.len();
        if n > suffix.len()
            && s.is_char_boundary(n - suffix.len())
            && s[n - suffix.len()..].eq_ignore_ascii_case(suffix)
        {
            s = &s[..n - suffix.len()];
        }
    }
    s.trim_end_matches('.')
}

/// The electrode name of a label, for matching: `electrode_label` in capitals, 10-10 names
/// mapped to 10-20 (T7 → T3, T8 → T4, P7 → T5, P8 → T6).
pub fn electrode_name(label: &str) -> String {
    let s = electrode_label(label).to_ascii_uppercase();
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

/// The table, keyed by `electrode_name`, read once.
static POSITIONS: std::sync::LazyLock<std::collections::HashMap<String, [f64; 3]>> =
    std::sync::LazyLock::new(|| read_table(ELECTRODES, electrode_name));

/// A table of `label TAB x TAB y TAB z` lines, keyed by `key(label)`.
fn read_table(table: &str, key: fn(&str) -> String) -> std::collections::HashMap<String, [f64; 3]> {
    (table.lines())
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let mut f = line.split('\t');
            let name = f.next()?;
            let mut xyz = [0.0; 3];
            for v in &mut xyz {
                *v = f.next()?.trim().parse().ok()?;
            }
            Some((key(name), xyz))
        })
        .collect()
}

/// Where a channel's electrode sits, from its label's 10-20/10-10 name; `None` for labels that
/// name no scalp position (EOG, ECG, unknown names).
pub fn electrode_position(label: &str) -> Option<[f64; 3]> {
    POSITIONS.get(&electrode_name(label)).copied()
}

/// MNE's `standard_1005` template (assets/standard_1005.tsv: metres, MNE's head frame), keyed
/// by `electrode_label` in capitals. ICLabel's scalp images need MNE's positions, not the
/// idealized sphere above, to equal mne-icalabel's.
const TEMPLATE_1005: &str = include_str!("../../assets/standard_1005.tsv");

static TEMPLATE: std::sync::LazyLock<std::collections::HashMap<String, [f64; 3]>> =
    std::sync::LazyLock::new(|| read_table(TEMPLATE_1005, |name| name.to_ascii_uppercase()));

/// Where MNE's `standard_1005` template places a label's electrode (10-05 names, any case).
pub fn template_1005_position(label: &str) -> Option<[f64; 3]> {
    TEMPLATE
        .get(&electrode_label(label).to_ascii_uppercase())
        .copied()
}

/// Unit vector of `p`; `None` at the origin or for a non-finite position.
pub fn direction(p: [f64; 3]) -> Option<[f64; 3]> {
    let n = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
    (n > 0.0 && n.is_finite()).then(|| [p[0] / n, p[1] / n, p[2] / n])
}

/// Where an electrode sits for scalp maps and interpolation: the file's position, else MNE's
/// `standard_1005` template for its label (what MNE's `set_montage("standard_1005")` gives),
/// else the idealized sphere's position for a 10-20 name the template lacks.
pub fn head_position(label: &str, own: Option<[f64; 3]>) -> Option<[f64; 3]> {
    own.filter(|p| p.iter().all(|v| v.is_finite()) && p.iter().any(|&v| v != 0.0))
        .or_else(|| template_1005_position(label))
        .or_else(|| electrode_position(label))
}

/// A head-frame position (metres; x right, y front, z up) in EEGLAB's frame: X to the nose,
/// Y to the left, Z up (millimetres), with its azimuth (from the nose towards the left) and
/// elevation in radians. topoplot's polar coordinates are (-azimuth, 0.5 - elevation / pi).
pub fn eeglab_position(p: &[f64; 3]) -> ([f64; 3], f64, f64) {
    let (x, y, z) = (p[1] * 1000.0, -p[0] * 1000.0, p[2] * 1000.0);
    ([x, y, z], y.atan2(x), z.atan2(x.hypot(y)))
}

/// An earlobe electrode (A1, A2): a reference site off the scalp, left out of the average.
pub fn is_earlobe(label: &str) -> bool {
    matches!(electrode_name(label).as_str(), "A1" | "A2")
}

/// A scalp electrode by its label: a 10-20/10-10 name other than the earlobes. (Nihon Kohden's
/// "POL E", "PG1", "$A1", DC inputs and numbered channels are not.)
pub fn is_scalp_name(label: &str) -> bool {
    !is_earlobe(label) && electrode_position(label).is_some()
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
        assert_eq!(electrode_label("EEG Fp1-Ref"), "Fp1");
        assert_eq!(electrode_label("T7-AV"), "T7");
        assert_eq!(electrode_label("Fc5."), "Fc5");
        assert_eq!(electrode_label("EEG"), "EEG");
        for (label, scalp) in [
            ("EEG Cz-Ref", true),
            ("EEG T9-Ref", true),
            ("EEG A1-Ref", false),
            ("POL E", false),
            ("POL $A1", false),
            ("POL DC01", false),
            ("E12", false),
        ] {
            assert_eq!(is_scalp_name(label), scalp, "{label}");
        }
    }
}
