//! MATLAB v7.3 MAT-files: HDF5 (after a 512-byte text header) with MATLAB's conventions, read
//! with `hdf5-pure` (pure Rust: the `hdf5` crate binds libhdf5) over the memory-mapped file.
//! Their variables come out as `mat5::Value`s, so that the EEGLAB reader reads either kind of
//! `.set` alike. What MATLAB writes:
//! - a numeric or char array is a dataset with a `MATLAB_class` attribute (`double`, `single`,
//!   `int16`, ..., `char` as UTF-16 code units), its dimensions reversed (MATLAB's column-major
//!   m x n is HDF5's n x m); an empty one stores its dimensions and says `MATLAB_empty`;
//! - a struct is a group with `MATLAB_class` `struct`: a scalar struct's fields are its members,
//!   a struct array's fields are datasets of object references, one per element, into
//!   `#refs#`;
//! - a cell array is a dataset of object references with `MATLAB_class` `cell`.
//!
//! Numeric arrays larger than `DECODE_LIMIT` numbers are not read at open: they come out as
//! `Numbers::Deferred` with their dataset's path, and `Mat73::rows` reads them on demand, a
//! window of rows (MATLAB's columns) at a time.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hdf5_pure::{Dataset, Datatype, File, FormatError, Group, Object, Source};
use memmap2::Mmap;

use super::binary::LastWindow;
use super::mat5::{Numbers, Value};
use super::{ReadError, SampleSource};

/// Numeric arrays up to this many numbers are decoded at open; larger ones on demand.
const DECODE_LIMIT: u64 = 1 << 16;
/// Elements of a struct array or cell array, and nesting, beyond which a file is no dataset's.
const MAX_ELEMENTS: usize = 1 << 20;
const MAX_DEPTH: usize = 16;

/// Whether `head` (a file's first bytes) is a MATLAB v7.3 MAT-file.
pub fn is_mat73(head: &[u8]) -> bool {
    head.starts_with(b"MATLAB 7.3")
}

/// The mapped file as `hdf5-pure` reads it: by offset, without copying it whole.
struct Mapped(Mmap);

impl Source for Mapped {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), FormatError> {
        let at = usize::try_from(offset).map_err(|_| FormatError::UnexpectedEof {
            expected: buf.len(),
            available: 0,
        })?;
        let end = at.checked_add(buf.len()).filter(|&e| e <= self.0.len());
        let Some(end) = end else {
            return Err(FormatError::UnexpectedEof {
                expected: buf.len(),
                available: self.0.len().saturating_sub(at),
            });
        };
        buf.copy_from_slice(&self.0[at..end]);
        Ok(())
    }
}

/// An open v7.3 file.
pub struct Mat73 {
    file: File,
    /// The file's size in bytes.
    len: u64,
}

impl Mat73 {
    pub fn open(map: Mmap) -> Result<Self, String> {
        let len = map.len() as u64;
        let file = File::from_source(Mapped(map))
            .map_err(|e| format!("not a readable MATLAB v7.3 (HDF5) file: {e}"))?;
        Ok(Mat73 { file, len })
    }

    /// The file's variables (the root group's members but `#refs#`), by name.
    pub fn variables(&self) -> Result<Vec<(String, Value)>, String> {
        self.members(&self.file.root(), "", 0)
    }

    fn members(&self, g: &Group, path: &str, depth: usize) -> Result<Vec<(String, Value)>, String> {
        let mut out = Vec::new();
        let datasets = g.datasets().map_err(|e| e.to_string())?;
        let groups = g.groups().map_err(|e| e.to_string())?;
        for name in datasets.into_iter().chain(groups) {
            if name.starts_with('#') {
                continue;
            }
            let full = format!("{path}/{name}");
            let value = match (g.dataset(&name), g.group(&name)) {
                (Ok(d), _) => self.dataset(&d, &full, depth)?,
                (_, Ok(sub)) => self.group(&sub, &full, depth)?,
                _ => Value::Other,
            };
            out.push((name, value));
        }
        Ok(out)
    }

    fn group(&self, g: &Group, path: &str, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("structures nested too deep".into());
        }
        let members = self.members(g, path, depth + 1)?;
        // A struct array's fields are datasets of references (read as cells below, without a
        // class of their own); a scalar struct's are the values themselves.
        let fields: Vec<String> = members.iter().map(|(n, _)| n.clone()).collect();
        let array = !members.is_empty()
            && (members.iter()).all(|(n, v)| {
                matches!(v, Value::Cell { .. })
                    && g.dataset(n)
                        .ok()
                        .and_then(|d| class(&d))
                        .is_none_or(|c| c != "cell")
            });
        if !array {
            let items = vec![members.into_iter().map(|(_, v)| v).collect()];
            return Ok(Value::Struct {
                dims: vec![1, 1],
                fields,
                items,
            });
        }
        let n = members.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
        let mut columns: Vec<Vec<Value>> = (members.into_iter())
            .map(|(_, v)| match v {
                Value::Cell { items, .. } => items,
                _ => Vec::new(),
            })
            .collect();
        let items = (0..n)
            .map(|e| {
                (columns.iter_mut())
                    .map(|c| {
                        c.get_mut(e)
                            .map_or(Value::Other, |v| std::mem::replace(v, Value::Other))
                    })
                    .collect()
            })
            .collect();
        Ok(Value::Struct {
            dims: vec![1, n],
            fields,
            items,
        })
    }

    fn dataset(&self, d: &Dataset, path: &str, depth: usize) -> Result<Value, String> {
        let shape = d.shape().map_err(|e| e.to_string())?;
        let class = class(d);
        let attrs = d.attrs().unwrap_or_default();
        if attrs.contains_key("MATLAB_empty") {
            let dims = (d.read_u64().unwrap_or_default().into_iter().rev())
                .map(|v| v as usize)
                .collect();
            return Ok(Value::Numbers {
                dims,
                numbers: Numbers::Decoded(Vec::new()),
            });
        }
        let dims: Vec<usize> = shape.iter().rev().map(|&v| v as usize).collect();
        let Some(count) = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d)) else {
            return Err(format!("{path}: dimensions {shape:?} overflow"));
        };
        // A chunk far larger than its whole dataset, or stored past the file's end, is a
        // corrupt layout, which the HDF5 reader would allocate and walk in full.
        let chunk = d
            .chunk_shape()
            .ok()
            .flatten()
            .map(|c| (c.iter()).try_fold(1u64, |n, &d| n.checked_mul(d)));
        if let Some(elements) = chunk
            && elements.is_none_or(|e| e > count.max(1 << 20))
        {
            return Err(format!("{path}: chunks larger than the dataset"));
        }
        if chunk.is_some()
            && (d.chunks().unwrap_or_default().iter()).any(|c| {
                c.address
                    .checked_add(c.storage_size)
                    .is_none_or(|end| end > self.len)
            })
        {
            return Err(format!("{path}: chunks past the end of the file"));
        }
        let datatype = d.datatype().map_err(|e| e.to_string())?;
        if matches!(datatype, Datatype::Reference { .. }) {
            if count as usize > MAX_ELEMENTS || depth > MAX_DEPTH {
                return Err(format!("{path}: {count} references"));
            }
            let objects = d.dereference().map_err(|e| format!("{path}: {e}"))?;
            let items = (objects.into_iter().enumerate())
                .map(|(k, o)| match o {
                    Object::Dataset(x) => self.dataset(&x, &format!("{path}[{k}]"), depth + 1),
                    Object::Group(g) => self.group(&g, &format!("{path}[{k}]"), depth + 1),
                    _ => Ok(Value::Other),
                })
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(Value::Cell { dims, items });
        }
        if class.as_deref() == Some("char") {
            let units = d.read_u16().map_err(|e| format!("{path}: {e}"))?;
            return Ok(Value::Text(String::from_utf16_lossy(&units)));
        }
        if count > DECODE_LIMIT {
            return Ok(Value::Numbers {
                dims,
                numbers: Numbers::Deferred(path.to_string()),
            });
        }
        match d.read_f64() {
            Ok(v) => Ok(Value::Numbers {
                dims,
                numbers: Numbers::Decoded(v),
            }),
            // Classes ede has no use for (objects, sparse, complex, function handles).
            Err(_) => Ok(Value::Other),
        }
    }

    /// The numeric array at `path` (a deferred one) as the samples of `channels` channels:
    /// MATLAB's channels x samples (x epochs) is HDF5's (epochs x) samples x channels, so each
    /// row holds every channel of some samples.
    /// `file` names the file in errors.
    pub fn rows(
        &self,
        file: &Path,
        path: &str,
        channels: usize,
    ) -> Result<Arc<dyn SampleSource>, String> {
        let d = self
            .file
            .dataset(path)
            .map_err(|e| format!("{path}: {e}"))?;
        let shape = d.shape().map_err(|e| e.to_string())?;
        let inner: u64 = shape.iter().skip(1).product();
        if shape.is_empty() || channels == 0 || !inner.is_multiple_of(channels as u64) {
            return Err(format!(
                "{path}: its shape {shape:?} holds no {channels} channels"
            ));
        }
        let single = matches!(d.datatype(), Ok(Datatype::FloatingPoint { size: 4, .. }));
        Ok(Arc::new(Rows {
            file: file.to_path_buf(),
            dataset: d,
            single,
            channels,
            per_row: (inner / channels as u64) as usize,
            last: LastWindow::default(),
        }))
    }
}

/// A dataset attribute `MATLAB_class`, where there is one.
fn class(d: &Dataset) -> Option<String> {
    let attrs = d.attrs().ok()?;
    match attrs.get("MATLAB_class")? {
        hdf5_pure::AttrValue::AsciiString(s) | hdf5_pure::AttrValue::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// A numeric dataset read a window of rows at a time, the last window kept: the browser reads
/// each channel of the same span in turn, and a compressed chunk is decoded once for all.
struct Rows {
    file: PathBuf,
    dataset: Dataset,
    single: bool,
    channels: usize,
    /// Samples of each channel in a row.
    per_row: usize,
    last: LastWindow,
}

impl Rows {
    /// Rows `first..first + count`, decoded.
    fn decode(&self, first: u64, count: u64) -> Result<Vec<f32>, String> {
        if self.single {
            self.dataset.read_f32_rows(first, count)
        } else {
            (self.dataset.read_f64_rows(first, count))
                .map(|v| v.into_iter().map(|x| x as f32).collect())
        }
        .map_err(|e| e.to_string())
    }
}

impl SampleSource for Rows {
    fn read(&self, signal: usize, start: usize, out: &mut [f32]) -> Result<(), ReadError> {
        if out.is_empty() {
            return Ok(());
        }
        let first = start / self.per_row;
        let count = (start + out.len() - 1) / self.per_row - first + 1;
        let (values, at) = (self.last)
            .rows(first, count, || self.decode(first as u64, count as u64))
            .map_err(|e| ReadError::invalid(&self.file, format!("EEG.data: {e}")))?;
        let row = self.per_row * self.channels;
        for (k, o) in out.iter_mut().enumerate() {
            let t = start + k;
            let r = t / self.per_row - first + at;
            let at = r * row + (t % self.per_row) * self.channels + signal;
            *o = values.get(at).copied().ok_or_else(|| {
                ReadError::invalid(
                    &self.file,
                    format!("EEG.data: sample {t} of channel {signal} lies past its data"),
                )
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdf5_pure::{AttrValue, FileBuilder};

    /// A v7.3 file as MATLAB lays one out: its text header in the userblock, a char array, a
    /// scalar, and a samples x channels matrix in compressed chunks (too large to decode at
    /// open), single or double.
    fn written(dir: &Path, single: bool) -> PathBuf {
        let (samples, channels) = (20_000usize, 4usize);
        let mut b = FileBuilder::new();
        b.with_userblock(512);
        b.with_userblock_content(b"MATLAB 7.3 MAT-file, written by ede's tests");
        let class = |c: &str| AttrValue::AsciiString(c.into());
        b.create_dataset("setname")
            .with_u16_data(&"v7.3".encode_utf16().collect::<Vec<_>>())
            .with_shape(&[4, 1])
            .set_attr("MATLAB_class", class("char"));
        b.create_dataset("srate")
            .with_f64_data(&[250.0])
            .with_shape(&[1, 1])
            .set_attr("MATLAB_class", class("double"));
        let value = |t: usize, c: usize| (t as f64 * 0.01).sin() * 100.0 + c as f64;
        let data: Vec<f64> = (0..samples * channels)
            .map(|k| value(k / channels, k % channels))
            .collect();
        let ds = b.create_dataset("data");
        if single {
            let d: Vec<f32> = data.iter().map(|&v| v as f32).collect();
            ds.with_f32_data(&d)
                .set_attr("MATLAB_class", class("single"));
        } else {
            ds.with_f64_data(&data)
                .set_attr("MATLAB_class", class("double"));
        }
        ds.with_shape(&[samples as u64, channels as u64])
            .with_chunks(&[1500, channels as u64])
            .with_deflate(4);
        let path = dir.join(format!("v73_{single}.set"));
        b.write(&path).unwrap();
        path
    }

    #[test]
    fn variables_read_and_large_arrays_decode_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        for single in [true, false] {
            let path = written(dir.path(), single);
            let map = super::super::binary::MatrixSource::map(&path).unwrap();
            assert!(is_mat73(&map));
            let m = Mat73::open(map).unwrap();
            let vars = m.variables().unwrap();
            let get = |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v).unwrap();
            assert_eq!(get("setname").text(), Some("v7.3"));
            assert_eq!(get("srate").number(), Some(250.0));
            let Value::Numbers {
                dims,
                numbers: Numbers::Deferred(at),
            } = get("data")
            else {
                panic!("{:?}", get("data"));
            };
            assert_eq!(dims, &[4, 20_000]);
            let rows = m.rows(&path, at, 4).unwrap();
            // Channel 2 across a chunk boundary (1500), then channel 0 of the same span, then
            // a span inside the one kept (served from it).
            for (c, start, len) in [(2, 1400, 300), (0, 1400, 300), (1, 1450, 100)] {
                let mut out = vec![0f32; len];
                rows.read(c, start, &mut out).unwrap();
                for (k, &v) in out.iter().enumerate() {
                    let want = ((start + k) as f64 * 0.01).sin() * 100.0 + c as f64;
                    assert!(
                        (v as f64 - want).abs() < 1e-4,
                        "{single} {c} {start} {k}: {v} {want}"
                    );
                }
            }
            assert!(m.rows(&path, at, 3).is_err(), "4 channels are no 3");
        }
    }
}
