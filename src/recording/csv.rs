//! CSV recordings: a header row of channel names, one column per channel, one row per sample.
//!
//! The delimiter (comma, semicolon or tab) is taken from the header row. A first column named
//! `time`, `t`, `time_s` or `seconds` is the time axis (what `ede export` writes): it gives the
//! sampling rate when none is passed. Otherwise the rate must be given (`--fs`). A header cell
//! `name [unit]` or `name (unit)` carries the unit. Text cannot be decoded on demand, so the
//! values are parsed once into `f32` columns (4 bytes a value, less than the text itself).

use std::io::{BufRead, BufReader};
use std::path::Path;

use super::{Format, ReadError, Recording};

pub fn open(path: &Path, fs: Option<f64>) -> Result<Recording, ReadError> {
    let file = std::fs::File::open(path).map_err(|e| ReadError::io(path, e))?;
    let mut reader = BufReader::new(file);
    let mut header = String::new();
    if reader
        .read_line(&mut header)
        .map_err(|e| ReadError::io(path, e))?
        == 0
    {
        return Err(ReadError::invalid(path, "the file is empty"));
    }
    let header = header.trim_start_matches('\u{feff}').trim_end();
    let delimiter = [',', ';', '\t']
        .into_iter()
        .max_by_key(|d| header.matches(*d).count())
        .unwrap_or(',');
    let names: Vec<(String, String)> = header.split(delimiter).map(split_unit).collect();
    if names.iter().all(|(n, _)| n.parse::<f64>().is_ok()) {
        return Err(ReadError::invalid(
            path,
            "the first row holds numbers; a CSV recording needs a header row of channel names",
        ));
    }
    let time_column = names.first().is_some_and(|(n, _)| {
        matches!(
            n.to_ascii_lowercase().as_str(),
            "time" | "t" | "time_s" | "seconds"
        )
    });
    let mut columns: Vec<Vec<f32>> = vec![Vec::new(); names.len()];
    let mut warnings = Vec::new();
    let mut bad_cells = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if reader
            .read_line(&mut line)
            .map_err(|e| ReadError::io(path, e))?
            == 0
        {
            break;
        }
        let l = line.trim_end();
        if l.is_empty() {
            continue;
        }
        let mut cells = l.split(delimiter);
        for col in columns.iter_mut() {
            let v = match cells.next().map(str::trim) {
                Some(c) => c.parse::<f32>().unwrap_or_else(|_| {
                    bad_cells += 1;
                    f32::NAN
                }),
                None => {
                    bad_cells += 1;
                    f32::NAN
                }
            };
            col.push(v);
        }
    }
    if bad_cells > 0 {
        warnings.push(format!(
            "{bad_cells} cells were missing or not numbers and read as gaps (NaN)"
        ));
    }
    if columns.first().is_none_or(|c| c.is_empty()) {
        return Err(ReadError::invalid(
            path,
            "the file has a header but no data rows",
        ));
    }

    let fs = match (fs, time_column) {
        (Some(fs), _) if fs > 0.0 && fs.is_finite() => fs,
        (Some(fs), _) => {
            return Err(ReadError::invalid(
                path,
                format!("the sampling rate must be positive, got {fs}"),
            ));
        }
        (None, true) => rate_from_times(&columns[0]).ok_or_else(|| {
            ReadError::invalid(
                path,
                "the time column does not increase steadily; pass --fs",
            )
        })?,
        (None, false) => {
            return Err(ReadError::invalid(
                path,
                "a CSV file has no sampling rate: pass it with --fs (or add a first column named time)",
            ));
        }
    };
    let skip = usize::from(time_column);
    let labels = names
        .into_iter()
        .skip(skip)
        .map(|(n, u)| (n, u, fs))
        .collect();
    let data = columns.into_iter().skip(skip).collect::<Vec<_>>();
    if data.is_empty() {
        return Err(ReadError::invalid(
            path,
            "the file has a time column but no channels",
        ));
    }
    Ok(super::in_memory(
        Some(path.to_path_buf()),
        Format::Csv,
        super::unknown_start(),
        labels,
        data,
        Vec::new(),
        warnings,
    ))
}

fn split_unit(cell: &str) -> (String, String) {
    let c = cell.trim().trim_matches('"').trim();
    for (open, close) in [('[', ']'), ('(', ')')] {
        if let (Some(i), true) = (c.rfind(open), c.ends_with(close)) {
            return (
                c[..i].trim().to_string(),
                c[i + 1..c.len() - 1].trim().to_string(),
            );
        }
    }
    (c.to_string(), String::new())
}

/// Sampling rate from a time column: the median step, if the steps are positive.
fn rate_from_times(t: &[f32]) -> Option<f64> {
    if t.len() < 2 {
        return None;
    }
    let mut steps: Vec<f64> = t.windows(2).map(|w| w[1] as f64 - w[0] as f64).collect();
    steps.sort_by(f64::total_cmp);
    let median = steps[steps.len() / 2];
    (median > 0.0 && steps[0] > 0.0).then(|| (1.0 / median * 1e6).round() / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_in_headers() {
        assert_eq!(split_unit("Fp1 [uV]"), ("Fp1".into(), "uV".into()));
        assert_eq!(split_unit("\"ECG (mV)\""), ("ECG".into(), "mV".into()));
        assert_eq!(split_unit("Cz"), ("Cz".into(), "".into()));
    }

    #[test]
    fn rate_from_a_time_column() {
        let t: Vec<f32> = (0..100).map(|i| i as f32 / 256.0).collect();
        assert_eq!(rate_from_times(&t), Some(256.0));
        assert_eq!(rate_from_times(&[0.0, 0.0]), None);
    }
}
