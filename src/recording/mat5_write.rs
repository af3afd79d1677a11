//! Writing MATLAB's MAT-file format, level 5 (`save -v6`): numbers, text, cells and structs,
//! uncompressed, little-endian. Enough for an EEGLAB `.set` that EEGLAB, MNE-Python and
//! scipy read. (`mat5` reads the format; no crate writes structs and cells of it.)

/// A value to write.
pub enum Mat<'a> {
    /// Doubles, column-major, with their dimensions.
    Doubles(Vec<usize>, Vec<f64>),
    /// Singles (MATLAB `single`), column-major: samples, as EEGLAB keeps them.
    Singles(Vec<usize>, &'a [f32]),
    Text(String),
    Cell(Vec<usize>, Vec<Mat<'a>>),
    /// `items[element][field]`, elements column-major.
    Struct(Vec<usize>, Vec<&'static str>, Vec<Vec<Mat<'a>>>),
}

impl Mat<'_> {
    pub fn scalar(v: f64) -> Self {
        Mat::Doubles(vec![1, 1], vec![v])
    }

    /// MATLAB's `[]`.
    pub fn empty() -> Self {
        Mat::Doubles(vec![0, 0], Vec::new())
    }

    pub fn text(s: &str) -> Self {
        Mat::Text(s.to_string())
    }
}

const MI_INT8: u32 = 1;
const MI_UINT16: u32 = 4;
const MI_INT32: u32 = 5;
const MI_UINT32: u32 = 6;
const MI_SINGLE: u32 = 7;
const MI_DOUBLE: u32 = 9;
const MI_MATRIX: u32 = 14;
const MX_CELL: u32 = 1;
const MX_STRUCT: u32 = 2;
const MX_CHAR: u32 = 4;
const MX_DOUBLE: u32 = 6;
const MX_SINGLE: u32 = 7;
/// Field names are stored in slots of this many bytes (MATLAB's limit is 63 characters).
const NAME_SLOT: usize = 64;

/// The file: a 128-byte header, then `variables`.
pub fn file(variables: &[(&str, Mat)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut text = format!(
        "MATLAB 5.0 MAT-file, written by ede {}",
        env!("CARGO_PKG_VERSION")
    )
    .into_bytes();
    text.resize(116, b' ');
    out.extend_from_slice(&text);
    out.extend_from_slice(&[0u8; 8]);
    out.extend_from_slice(&0x0100u16.to_le_bytes());
    out.extend_from_slice(b"IM");
    for (name, value) in variables {
        matrix(&mut out, name, value);
    }
    out
}

fn pad8(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
}

fn element(out: &mut Vec<u8>, kind: u32, data: &[u8]) {
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(data);
    pad8(out);
}

fn matrix(out: &mut Vec<u8>, name: &str, value: &Mat) {
    let start = out.len();
    out.extend_from_slice(&MI_MATRIX.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    let (class, dims): (u32, Vec<usize>) = match value {
        Mat::Doubles(d, _) => (MX_DOUBLE, d.clone()),
        Mat::Singles(d, _) => (MX_SINGLE, d.clone()),
        Mat::Text(s) => (MX_CHAR, vec![1, s.encode_utf16().count()]),
        Mat::Cell(d, _) => (MX_CELL, d.clone()),
        Mat::Struct(d, _, _) => (MX_STRUCT, d.clone()),
    };
    let mut flags = [0u8; 8];
    flags[..4].copy_from_slice(&class.to_le_bytes());
    element(out, MI_UINT32, &flags);
    let dims: Vec<u8> = dims
        .iter()
        .flat_map(|&d| (d as i32).to_le_bytes())
        .collect();
    element(out, MI_INT32, &dims);
    element(out, MI_INT8, name.as_bytes());
    match value {
        Mat::Doubles(_, v) => {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            element(out, MI_DOUBLE, &bytes);
        }
        Mat::Singles(_, v) => {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            element(out, MI_SINGLE, &bytes);
        }
        Mat::Text(s) => {
            let bytes: Vec<u8> = s.encode_utf16().flat_map(|c| c.to_le_bytes()).collect();
            element(out, MI_UINT16, &bytes);
        }
        Mat::Cell(_, items) => {
            for item in items {
                matrix(out, "", item);
            }
        }
        Mat::Struct(_, fields, items) => {
            // The slot length as a small data element (type and size in one word).
            out.extend_from_slice(&(MI_INT32 | (4 << 16)).to_le_bytes());
            out.extend_from_slice(&(NAME_SLOT as u32).to_le_bytes());
            let mut names = vec![0u8; NAME_SLOT * fields.len()];
            for (k, f) in fields.iter().enumerate() {
                let b = &f.as_bytes()[..f.len().min(NAME_SLOT - 1)];
                names[k * NAME_SLOT..k * NAME_SLOT + b.len()].copy_from_slice(b);
            }
            element(out, MI_INT8, &names);
            for item in items {
                for v in item {
                    matrix(out, "", v);
                }
            }
        }
    }
    let len = (out.len() - start - 8) as u32;
    out[start + 4..start + 8].copy_from_slice(&len.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::mat5::{Numbers, Value, read};

    #[test]
    fn what_is_written_reads_back() {
        let samples = [1.5f32, -2.0, 3.25, 4.0];
        let bytes = file(&[(
            "EEG",
            Mat::Struct(
                vec![1, 1],
                vec!["srate", "data", "setname", "chanlocs", "none"],
                vec![vec![
                    Mat::scalar(256.0),
                    Mat::Singles(vec![2, 2], &samples),
                    Mat::text("sub-01 µV"),
                    Mat::Struct(
                        vec![1, 2],
                        vec!["labels"],
                        vec![vec![Mat::text("Fp1")], vec![Mat::text("Fp2")]],
                    ),
                    Mat::Cell(vec![1, 2], vec![Mat::empty(), Mat::text("x")]),
                ]],
            ),
        )]);
        let vars = read(&bytes).unwrap();
        assert_eq!(vars[0].0, "EEG");
        let eeg = &vars[0].1;
        assert_eq!(eeg.field_of(0, "srate").unwrap().number(), Some(256.0));
        assert_eq!(
            eeg.field_of(0, "setname").unwrap().text(),
            Some("sub-01 µV")
        );
        let chanlocs = eeg.field_of(0, "chanlocs").unwrap();
        assert_eq!(chanlocs.field_of(1, "labels").unwrap().text(), Some("Fp2"));
        match eeg.field_of(0, "data").unwrap() {
            Value::Numbers {
                dims,
                numbers: Numbers::Decoded(v),
            } => {
                assert_eq!(dims, &[2, 2]);
                assert_eq!(v, &[1.5, -2.0, 3.25, 4.0]);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(eeg.field_of(0, "none"), Some(Value::Cell { items, .. }) if items.len() == 2)
        );
    }
}
