use super::*;
use crate::recording::{Format, in_memory, unknown_start};

/// Channels named `labels` (the last one an EOG), all at 100 Hz, channel `i` holding
/// `i + 1 + sin` so that every combination is told apart.
fn recording(labels: &[&str]) -> Recording {
    let n = 50;
    in_memory(
        None,
        Format::Csv,
        unknown_start(),
        labels
            .iter()
            .map(|l| (l.to_string(), "uV".to_string(), 100.0))
            .collect(),
        (0..labels.len())
            .map(|i| {
                (0..n)
                    .map(|k| (i + 1) as f32 * 10.0 + (k as f32 * (i + 1) as f32 * 0.1).sin())
                    .collect()
            })
            .collect(),
        Vec::new(),
        Vec::new(),
    )
}

/// The derivation's samples by its weights, in f64.
fn samples(rec: &Recording, d: &Derivation) -> Vec<f64> {
    let data: Vec<Vec<f32>> = (0..rec.signals.len())
        .map(|c| rec.read_all(c).unwrap())
        .collect();
    (0..data[0].len())
        .map(|k| {
            data[d.plus][k] as f64
                - d.minus
                    .iter()
                    .map(|&(c, w)| w as f64 * data[c][k] as f64)
                    .sum::<f64>()
        })
        .collect()
}

fn spec(label: &str, plus: &str, minus: Minus) -> Montage {
    Montage {
        name: "t".into(),
        derivations: vec![DerivationSpec::new(label, plus, minus)],
    }
}

#[test]
fn json_round_trips_every_kind_of_minus() {
    let text = r#"{"name": "lab", "derivations": [
        {"label": "Fz", "plus": "Fz"},
        {"label": "F3-C3", "plus": "F3", "minus": "C3"},
        {"label": "C3 Lap", "plus": "C3", "minus": ["FC1", "FC5", "CP1", "CP5"]},
        {"label": "Cz-avg", "plus": "Cz", "minus": "average", "colour": [200, 0, 0]},
        {"label": "O1-M", "plus": "O1", "minus": "mastoids"},
        {"label": "O2", "plus": "O2", "minus": null}]}"#;
    let m: Montage = serde_json::from_str(text).unwrap();
    let minus: Vec<&Minus> = m.derivations.iter().map(|d| &d.minus).collect();
    assert_eq!(
        minus,
        [
            &Minus::None,
            &Minus::Channel("C3".into()),
            &Minus::Mean(vec!["FC1".into(), "FC5".into(), "CP1".into(), "CP5".into()]),
            &Minus::Average,
            &Minus::Mastoids,
            &Minus::None,
        ]
    );
    assert_eq!(m.derivations[3].colour, Some([200, 0, 0]));
    let back: Montage = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(back, m);
    for d in &m.derivations {
        assert_eq!(Minus::parse(&d.minus.describe()), d.minus);
    }
}

#[test]
fn references_parse_and_print() {
    for (text, r) in [
        ("average", Reference::Average),
        ("Mastoids", Reference::Mastoids),
        ("as-recorded", Reference::AsRecorded),
        (
            "O1, O2",
            Reference::Channels(vec!["O1".into(), "O2".into()]),
        ),
    ] {
        let parsed: Reference = text.parse().unwrap();
        assert_eq!(parsed, r);
        assert_eq!(parsed.to_string().parse::<Reference>().unwrap(), r);
    }
    assert!("".parse::<Reference>().is_err());
}

#[test]
fn a_reference_cancels_in_bipolar_and_laplacian_derivations() {
    let rec = recording(&["Fp1", "F3", "C3", "P3", "O1", "Cz", "EOG1"]);
    for reference in [
        Reference::AsRecorded,
        Reference::Average,
        Reference::Channels(vec!["Cz".into()]),
    ] {
        let m = Montage {
            name: "t".into(),
            derivations: vec![
                DerivationSpec::new("F3-C3", "F3", Minus::Channel("C3".into())),
                DerivationSpec::new(
                    "C3 Lap",
                    "C3",
                    Minus::Mean(vec!["F3".into(), "P3".into(), "Cz".into()]),
                ),
            ],
        };
        let r = resolve(&rec, &m, &reference).unwrap();
        assert_eq!(r.derivations[0].minus, vec![(2, 1.0)], "{reference}");
        let lap: Vec<(usize, f32)> = r.derivations[1]
            .minus
            .iter()
            .map(|&(c, w)| (c, (w * 1e4).round() / 1e4))
            .collect();
        assert_eq!(
            lap,
            vec![(1, 0.3333), (3, 0.3333), (5, 0.3333)],
            "{reference}"
        );
    }
}

#[test]
fn the_average_leaves_out_bad_channels_and_other_types() {
    let mut rec = recording(&["Fp1", "F3", "C3", "P3", "O1", "EOG1"]);
    assert_eq!(rec.signals[5].kind, ChannelType::Eog);
    rec.signals[4].bad = true;
    let m = Montage {
        name: "t".into(),
        derivations: vec![
            DerivationSpec::new("C3", "C3", Minus::None),
            DerivationSpec::new("O1", "O1", Minus::None),
            DerivationSpec::new("EOG1", "EOG1", Minus::None),
        ],
    };
    let r = resolve(&rec, &m, &Reference::Average).unwrap();
    let data: Vec<Vec<f32>> = (0..6).map(|c| rec.read_all(c).unwrap()).collect();
    let avg: Vec<f64> = (0..50)
        .map(|k| (0..4).map(|c| data[c][k] as f64).sum::<f64>() / 4.0)
        .collect();
    let y = samples(&rec, &r.derivations[0]);
    for k in 0..50 {
        assert!((y[k] - (data[2][k] as f64 - avg[k])).abs() < 1e-4);
    }
    // As MNE does, the bad channel is left as recorded.
    assert!(r.derivations[1].minus.is_empty());
    // The EOG channel is never re-referenced.
    assert!(r.derivations[2].minus.is_empty());
    // "average" as a derivation's minus is the same mean, of the plus channel's type.
    let avg_minus = resolve(
        &rec,
        &spec("C3-avg", "C3", Minus::Average),
        &Reference::AsRecorded,
    )
    .unwrap();
    assert_eq!(avg_minus.derivations[0].minus.len(), 4);
    assert_eq!(
        samples(&rec, &avg_minus.derivations[0]),
        samples(&rec, &r.derivations[0])
    );
}

#[test]
fn mastoids_are_found_by_any_of_their_names_or_said_missing() {
    let rec = recording(&["C3", "C4", "TP9", "TP10"]);
    let r = resolve(
        &rec,
        &spec("C3-M", "C3", Minus::Mastoids),
        &Reference::AsRecorded,
    )
    .unwrap();
    assert_eq!(r.derivations[0].minus, vec![(2, 0.5), (3, 0.5)]);
    let bare = recording(&["C3", "C4"]);
    assert_eq!(
        resolve(&bare, &spec("C3", "C3", Minus::None), &Reference::Mastoids),
        Err(MontageError::NoMastoids)
    );
    assert!(BuiltIn::LinkedMastoids.montage(&bare).is_none());
}

#[test]
fn missing_channels_leave_their_trace_out_and_mixed_rates_are_refused() {
    let rec = recording(&["C3", "C4"]);
    let m = Montage {
        name: "lab".into(),
        derivations: vec![
            DerivationSpec::new("C3-C4", "C3", Minus::Channel("C4".into())),
            DerivationSpec::new("Fp1-F7", "Fp1", Minus::Channel("F7".into())),
        ],
    };
    let r = resolve(&rec, &m, &Reference::AsRecorded).unwrap();
    assert_eq!(r.derivations.len(), 1);
    assert_eq!(r.skipped, ["Fp1-F7: no channel \"Fp1\""]);
    assert!(matches!(
        resolve(&rec, &spec("x", "Fp1", Minus::None), &Reference::AsRecorded),
        Err(MontageError::NothingFits(..))
    ));
    assert_eq!(
        resolve(&rec, &spec("x", "C3", Minus::None), &"Cz".parse().unwrap()),
        Err(MontageError::MissingChannel("Cz".into()))
    );
    let mut mixed = recording(&["C3", "C4"]);
    mixed.signals[1].fs = 200.0;
    assert!(matches!(
        resolve(
            &mixed,
            &spec("x", "C3", Minus::Channel("C4".into())),
            &Reference::AsRecorded
        ),
        Err(MontageError::MixedRates { .. })
    ));
}

#[test]
fn built_in_montages_of_the_demo() {
    let rec = crate::recording::demo::demo_recording();
    let count = |b: BuiltIn| b.montage(&rec).map(|m| m.derivations.len());
    assert_eq!(count(BuiltIn::DoubleBanana), Some(18));
    assert_eq!(count(BuiltIn::Transverse), Some(18));
    assert_eq!(count(BuiltIn::Circumferential), Some(10));
    let pairs = BuiltIn::FrontalPairs.montage(&rec).unwrap();
    let labels: Vec<&str> = pairs.derivations.iter().map(|d| d.label.as_str()).collect();
    // In the file's own spelling of its electrodes.
    assert_eq!(labels, ["Fp1-F3", "Fp1-F7", "Fp2-F4", "Fp2-F8"]);
    // 19 EEG channels against their average, then the ECG as recorded.
    let avg = BuiltIn::Average.montage(&rec).unwrap();
    assert_eq!(avg.derivations.len(), 20);
    assert_eq!(avg.derivations[19].minus, Minus::None);
    // Cz's four nearest neighbours on the 10-20 grid are C3, C4, Fz and Pz.
    let lap = BuiltIn::Laplacian.montage(&rec).unwrap();
    let cz = lap.derivations.iter().find(|d| d.plus == "Cz").unwrap();
    let Minus::Mean(mut near) = cz.minus.clone() else {
        panic!("{:?}", cz.minus)
    };
    near.sort();
    assert_eq!(near, ["C3", "C4", "Fz", "Pz"]);
    for b in BuiltIn::ALL {
        assert_eq!(BuiltIn::from_name(b.name()), Some(b));
        if let Some(m) = b.montage(&rec) {
            resolve(&rec, &m, &Reference::AsRecorded).unwrap();
        }
    }
    assert_eq!(
        BuiltIn::from_name("double-banana"),
        Some(BuiltIn::DoubleBanana)
    );
}
