//! EDFbrowser's montage files (`.mtg`, XML written by its `save_montage_dialog.cpp`): each
//! `<signalcomposition>` is a trace summing `<signal>`s with `<factor>`s (A - B is A x 1 and
//! B x -1; a Hjorth Laplacian is C3 x 1 and four neighbours x -0.25). A composition maps onto
//! a derivation when its first signal has factor 1 and the others share a factor of -1/n (a
//! channel or the mean of n); others (scaled sums, inputs by index, inverted polarity) are
//! left out and said. Its filters, sensitivity and offsets are not read.

use super::{DerivationSpec, Minus, Montage};

/// A montage read from a `.mtg` file, and what of it could not be taken over.
#[derive(Debug)]
pub struct Imported {
    pub montage: Montage,
    pub left_out: Vec<String>,
}

/// Qt::GlobalColor 2..=18 as EDFbrowser stores trace colours.
const QT_COLOURS: [[u8; 3]; 17] = [
    [0, 0, 0],       // black
    [255, 255, 255], // white
    [128, 128, 128], // dark gray
    [160, 160, 164], // gray
    [192, 192, 192], // light gray
    [255, 0, 0],     // red
    [0, 255, 0],     // green
    [0, 0, 255],     // blue
    [0, 255, 255],   // cyan
    [255, 0, 255],   // magenta
    [255, 255, 0],   // yellow
    [128, 0, 0],     // dark red
    [0, 128, 0],     // dark green
    [0, 0, 128],     // dark blue
    [0, 128, 128],   // dark cyan
    [128, 0, 128],   // dark magenta
    [128, 128, 0],   // dark yellow
];

/// Reads the text of a `.mtg` file; `name` becomes the montage's name.
pub fn read(text: &str, name: &str) -> Result<Imported, String> {
    let doc = roxmltree::Document::parse(text).map_err(|e| format!("not an XML file: {e}"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "EDFbrowser_montage" {
        return Err(format!(
            "not an EDFbrowser montage (its root element is <{}>)",
            root.tag_name().name()
        ));
    }
    let child_text = |n: roxmltree::Node, tag: &str| {
        n.children()
            .find(|c| c.has_tag_name(tag))
            .and_then(|c| c.text())
            .map(|t| t.trim().to_string())
    };
    let mut derivations = Vec::new();
    let mut left_out = Vec::new();
    for (i, comp) in root
        .children()
        .filter(|c| c.has_tag_name("signalcomposition"))
        .enumerate()
    {
        let mut inputs: Vec<(String, f64)> = Vec::new();
        let mut by_index = false;
        for s in comp.children().filter(|c| c.has_tag_name("signal")) {
            let factor = child_text(s, "factor")
                .and_then(|f| f.parse::<f64>().ok())
                .unwrap_or(1.0);
            match child_text(s, "label") {
                Some(l) => inputs.push((l, factor)),
                None => by_index = true,
            }
        }
        let built: Vec<String> = inputs.iter().map(|(l, _)| l.clone()).collect();
        let label = child_text(comp, "alias")
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| built.join(" - "));
        let say = |why: &str| format!("trace {} ({label}): {why}", i + 1);
        if by_index {
            left_out.push(say("names its signals by index, not label"));
            continue;
        }
        if child_text(comp, "polarity").as_deref() == Some("-1") {
            left_out.push(say("inverted polarity"));
            continue;
        }
        let Some(((plus, f0), rest)) = inputs.split_first() else {
            left_out.push(say("no signals"));
            continue;
        };
        let n = rest.len() as f64;
        let same_mean = rest.iter().all(|(_, f)| (f + 1.0 / n).abs() < 1e-3);
        if (f0 - 1.0).abs() > 1e-3 || !same_mean {
            left_out.push(say(
                "its factors are not a channel minus a channel or a mean",
            ));
            continue;
        }
        let minus = match rest.len() {
            0 => Minus::None,
            1 => Minus::Channel(rest[0].0.clone()),
            _ => Minus::Mean(rest.iter().map(|(l, _)| l.clone()).collect()),
        };
        let mut d = DerivationSpec::new(label, plus.clone(), minus);
        d.colour = child_text(comp, "color")
            .and_then(|c| c.parse::<usize>().ok())
            .and_then(|c| QT_COLOURS.get(c.checked_sub(2)?).copied())
            // EDFbrowser's default black says nothing: the type's colour reads better.
            .filter(|&c| c != [0, 0, 0]);
        derivations.push(d);
    }
    if derivations.is_empty() {
        return Err(if left_out.is_empty() {
            "the montage holds no traces".into()
        } else {
            format!(
                "none of its traces maps onto a derivation: {}",
                left_out.join("; ")
            )
        });
    }
    Ok(Imported {
        montage: Montage {
            name: name.to_string(),
            derivations,
        },
        left_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As EDFbrowser 2.14 writes them: labels padded to 16 characters, factors in %e.
    const FILE: &str = r#"<?xml version="1.0"?>
<EDFbrowser_montage>
  <signalcomposition>
    <alias></alias>
    <num_of_signals>2</num_of_signals>
    <voltpercm>1.000000e+02</voltpercm>
    <polarity>1</polarity>
    <color>2</color>
    <signal>
      <label>Fp1             </label>
      <factor>1.000000e+00</factor>
    </signal>
    <signal>
      <label>F7              </label>
      <factor>-1.000000e+00</factor>
    </signal>
  </signalcomposition>
  <signalcomposition>
    <alias>C3 Lap</alias>
    <num_of_signals>5</num_of_signals>
    <polarity>1</polarity>
    <color>7</color>
    <signal><label>C3</label><factor>1.000000e+00</factor></signal>
    <signal><label>F3</label><factor>-2.500000e-01</factor></signal>
    <signal><label>P3</label><factor>-2.500000e-01</factor></signal>
    <signal><label>T3</label><factor>-2.500000e-01</factor></signal>
    <signal><label>Cz</label><factor>-2.500000e-01</factor></signal>
    <fidfilter><type>0</type><frequency>0.1</frequency><frequency2>0.112</frequency2><ripple>-1.0</ripple><order>1</order><model>0</model></fidfilter>
  </signalcomposition>
  <signalcomposition>
    <alias></alias>
    <polarity>1</polarity>
    <signal><label>O1</label><factor>2.000000e+00</factor></signal>
  </signalcomposition>
  <signalcomposition>
    <alias></alias>
    <polarity>1</polarity>
    <signal><label>ECG</label><factor>1.000000e+00</factor></signal>
  </signalcomposition>
  <pagetime>100000000</pagetime>
</EDFbrowser_montage>"#;

    #[test]
    fn bipolar_laplacian_and_referential_traces_map() {
        let m = read(FILE, "lab").unwrap();
        let d = &m.montage.derivations;
        assert_eq!(d.len(), 3);
        assert_eq!(
            (d[0].label.as_str(), d[0].plus.as_str()),
            ("Fp1 - F7", "Fp1")
        );
        assert_eq!(d[0].minus, Minus::Channel("F7".into()));
        assert_eq!(d[0].colour, None);
        assert_eq!(d[1].label, "C3 Lap");
        assert_eq!(
            d[1].minus,
            Minus::Mean(vec!["F3".into(), "P3".into(), "T3".into(), "Cz".into()])
        );
        assert_eq!(d[1].colour, Some([255, 0, 0]));
        assert_eq!(d[2].minus, Minus::None);
        assert_eq!(m.left_out.len(), 1, "{:?}", m.left_out);
        assert!(m.left_out[0].contains("trace 3"));
    }

    #[test]
    fn other_files_are_refused_with_a_reason() {
        assert!(
            read("<x/>", "x")
                .unwrap_err()
                .contains("not an EDFbrowser montage")
        );
        assert!(
            read("garbage", "x")
                .unwrap_err()
                .contains("not an XML file")
        );
        assert!(
            read("<EDFbrowser_montage/>", "x")
                .unwrap_err()
                .contains("no traces")
        );
    }
}
