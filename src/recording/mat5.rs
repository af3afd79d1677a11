//! MATLAB's MAT-file format, level 5 (what `save -v6`/`-v7` and scipy's `savemat` write): the
//! variables of a file as a tree of numbers, text, cells and structs. Written here because the
//! crates that read MAT files load every array into memory, and an EEGLAB `.set` may hold
//! gigabytes of samples: a large uncompressed array stays in the file ([`Numbers::InFile`]),
//! for [`super::binary::MatrixSource`] to decode on demand. Compressed variables (`-v7`) are
//! inflated, up to [`MAX_INFLATED`] bytes each.

use std::io::Read;

use super::binary::SampleType;

/// The most one compressed variable may inflate to.
pub const MAX_INFLATED: usize = 1 << 30;
/// Arrays up to this many numbers are decoded at once; larger uncompressed ones stay in the
/// file.
const DECODE_AT_ONCE: usize = 1 << 16;
/// Nesting deeper than this is not a file anyone wrote.
const MAX_DEPTH: usize = 32;

#[derive(Debug, Clone)]
pub enum Value {
    Numbers {
        dims: Vec<usize>,
        numbers: Numbers,
    },
    Text(String),
    Cell {
        dims: Vec<usize>,
        items: Vec<Value>,
    },
    /// `items[element][field]`, elements in MATLAB's (column-major) order.
    Struct {
        dims: Vec<usize>,
        fields: Vec<String>,
        items: Vec<Vec<Value>>,
    },
    /// Classes ede has no use for (objects, sparse matrices, function handles).
    Other,
}

#[derive(Debug, Clone)]
pub enum Numbers {
    Decoded(Vec<f64>),
    /// A large array of a MATLAB v7.3 file, left in it: its dataset's path there
    /// (`mat73::Mat73::rows` reads it).
    Deferred(String),
    /// `count` numbers of type `sample` from byte `offset` of the file.
    InFile {
        offset: usize,
        sample: SampleType,
        count: usize,
        big_endian: bool,
    },
}

impl Value {
    /// The field `name` of element `i` of a struct array.
    pub fn field_of(&self, i: usize, name: &str) -> Option<&Value> {
        match self {
            Value::Struct { fields, items, .. } => {
                let f = fields.iter().position(|f| f == name)?;
                items.get(i)?.get(f)
            }
            _ => None,
        }
    }

    /// Elements of a struct array (1 for a plain struct).
    pub fn len(&self) -> usize {
        match self {
            Value::Struct { items, .. } => items.len(),
            Value::Cell { items, .. } => items.len(),
            Value::Numbers {
                numbers: Numbers::Decoded(v),
                ..
            } => v.len(),
            Value::Numbers {
                numbers: Numbers::InFile { count, .. },
                ..
            } => *count,
            Value::Numbers {
                numbers: Numbers::Deferred(_),
                dims,
            } => dims.iter().product(),
            Value::Text(t) => t.len(),
            Value::Other => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first number of a decoded numeric array.
    pub fn number(&self) -> Option<f64> {
        match self {
            Value::Numbers {
                numbers: Numbers::Decoded(v),
                ..
            } => v.first().copied(),
            _ => None,
        }
    }

    pub fn text(&self) -> Option<&str> {
        match self {
            Value::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// Why a MAT file cannot be read.
pub type Error = String;

/// The variables of a MAT file, by name, in file order.
pub fn read(bytes: &[u8]) -> Result<Vec<(String, Value)>, Error> {
    if bytes.len() < 128 {
        return Err("the file is shorter than a MAT-file's 128-byte header".into());
    }
    if bytes.starts_with(b"MATLAB 7.3") || bytes[..128].windows(4).any(|w| w == b"HDF5") {
        return Err("it is a MATLAB v7.3 (HDF5) file: `mat73` reads those".into());
    }
    let big_endian = match &bytes[126..128] {
        b"IM" => false,
        b"MI" => true,
        _ => return Err("not a MAT-file: its header lacks the endian mark".into()),
    };
    let mut p = Parser {
        bytes,
        big_endian,
        in_file: true,
        depth: 0,
    };
    let mut vars = Vec::new();
    let mut at = 128;
    while at + 8 <= bytes.len() {
        let (name, value, next) = p.element(at)?;
        if let Some(value) = value {
            vars.push((name, value));
        }
        at = next;
    }
    Ok(vars)
}

const MI_INT8: u32 = 1;
const MI_UINT8: u32 = 2;
const MI_INT16: u32 = 3;
const MI_UINT16: u32 = 4;
const MI_INT32: u32 = 5;
const MI_UINT32: u32 = 6;
const MI_SINGLE: u32 = 7;
const MI_DOUBLE: u32 = 9;
const MI_INT64: u32 = 12;
const MI_UINT64: u32 = 13;
const MI_MATRIX: u32 = 14;
const MI_COMPRESSED: u32 = 15;
const MI_UTF8: u32 = 16;
const MI_UTF16: u32 = 17;

const MX_CELL: u8 = 1;
const MX_STRUCT: u8 = 2;
const MX_CHAR: u8 = 4;

struct Parser<'a> {
    bytes: &'a [u8],
    big_endian: bool,
    /// Whether `bytes` is the file itself (offsets can be kept) or an inflated copy.
    in_file: bool,
    depth: usize,
}

/// A data element: its type, and where its data lie.
struct Tag {
    kind: u32,
    start: usize,
    len: usize,
    /// Where the next element starts.
    next: usize,
}

impl Parser<'_> {
    /// Whether `count` elements of `tags` tags each (at least 8 bytes apiece) fit in what
    /// follows `at`: dimensions past that are a corrupt header, not a reason to allocate.
    fn elements_fit(&self, count: usize, tags: usize, at: usize) -> Result<(), String> {
        let room = self.bytes.len().saturating_sub(at) / 8;
        match count.checked_mul(tags) {
            Some(n) if n <= room => Ok(()),
            _ => Err(format!(
                "an array of {count} elements does not fit in the file's {} bytes",
                self.bytes.len()
            )),
        }
    }

    fn u32_at(&self, at: usize) -> Result<u32, Error> {
        let b: [u8; 4] = (self.bytes.get(at..at + 4))
            .and_then(|b| b.try_into().ok())
            .ok_or("the file ends inside a tag")?;
        Ok(if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    fn tag(&self, at: usize) -> Result<Tag, Error> {
        let first = self.u32_at(at)?;
        if first >> 16 != 0 {
            // Small data element: type and size in one word, data in the next four bytes.
            let len = (first >> 16) as usize;
            if len > 4 {
                return Err(format!("a small element at byte {at} claims {len} bytes"));
            }
            self.u32_at(at + 4)?;
            return Ok(Tag {
                kind: first & 0xffff,
                start: at + 4,
                len,
                next: at + 8,
            });
        }
        let len = self.u32_at(at + 4)? as usize;
        let start = at + 8;
        let end = start
            .checked_add(len)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| {
                format!("the file is truncated: an element at byte {at} claims {len} bytes")
            })?;
        // Compressed elements are not padded; others end on an 8-byte boundary.
        let next = if first == MI_COMPRESSED {
            end
        } else {
            end.div_ceil(8) * 8
        };
        Ok(Tag {
            kind: first,
            start,
            len,
            next,
        })
    }

    /// The element at `at`: a named variable (a matrix), or `None` for what it is not.
    fn element(&mut self, at: usize) -> Result<(String, Option<Value>, usize), Error> {
        let tag = self.tag(at)?;
        match tag.kind {
            MI_MATRIX => {
                let (name, value) = self.matrix(&tag)?;
                Ok((name, Some(value), tag.next))
            }
            MI_COMPRESSED => {
                let mut inflated = Vec::new();
                flate2::read::ZlibDecoder::new(&self.bytes[tag.start..tag.start + tag.len])
                    .take(MAX_INFLATED as u64 + 1)
                    .read_to_end(&mut inflated)
                    .map_err(|e| format!("a compressed variable does not inflate: {e}"))?;
                if inflated.len() > MAX_INFLATED {
                    return Err(format!(
                        "a compressed variable inflates past {} MB; save it uncompressed \
                         (MATLAB -v6, or EEGLAB's two-file .set + .fdt)",
                        MAX_INFLATED >> 20
                    ));
                }
                let mut inner = Parser {
                    bytes: &inflated,
                    big_endian: self.big_endian,
                    in_file: false,
                    depth: self.depth,
                };
                let (name, value, _) = inner.element(0)?;
                Ok((name, value, tag.next))
            }
            _ => Ok((String::new(), None, tag.next)),
        }
    }

    fn matrix(&mut self, tag: &Tag) -> Result<(String, Value), Error> {
        if tag.len == 0 {
            return Ok((String::new(), Value::Other));
        }
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("variables nest deeper than any EEGLAB file".into());
        }
        let flags = self.tag(tag.start)?;
        let class = (self.u32_at(flags.start)? & 0xff) as u8;
        let complex = self.u32_at(flags.start)? & 0x800 != 0;
        let dims_tag = self.tag(flags.next)?;
        let dims: Vec<usize> = (0..dims_tag.len / 4)
            .map(|i| self.u32_at(dims_tag.start + 4 * i).map(|d| d as usize))
            .collect::<Result<_, _>>()?;
        let count = (dims.iter())
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or("an array's dimensions overflow")?;
        let name_tag = self.tag(dims_tag.next)?;
        let name =
            String::from_utf8_lossy(&self.bytes[name_tag.start..][..name_tag.len]).into_owned();
        let mut at = name_tag.next;
        let value = match class {
            MX_CELL => {
                self.elements_fit(count, 1, at)?;
                let mut items = Vec::with_capacity(count.min(1 << 16));
                for _ in 0..count {
                    let t = self.tag(at)?;
                    items.push(self.matrix(&t)?.1);
                    at = t.next;
                }
                Value::Cell { dims, items }
            }
            MX_STRUCT => {
                let width_tag = self.tag(at)?;
                let width = self.u32_at(width_tag.start)? as usize;
                let names_tag = self.tag(width_tag.next)?;
                if width == 0 || names_tag.len % width != 0 {
                    return Err("a struct's field names do not fit their stated length".into());
                }
                let fields: Vec<String> = (self.bytes[names_tag.start..][..names_tag.len])
                    .chunks(width)
                    .map(|c| {
                        let end = c.iter().position(|&b| b == 0).unwrap_or(c.len());
                        String::from_utf8_lossy(&c[..end]).into_owned()
                    })
                    .collect();
                at = names_tag.next;
                // A struct without fields holds nothing per element, so its count must not
                // exceed the file's size either.
                self.elements_fit(count, fields.len().max(1), at)?;
                let mut items = Vec::with_capacity(count.min(1 << 16));
                for _ in 0..count {
                    let mut element = Vec::with_capacity(fields.len());
                    for _ in 0..fields.len() {
                        let t = self.tag(at)?;
                        element.push(self.matrix(&t)?.1);
                        at = t.next;
                    }
                    items.push(element);
                }
                Value::Struct {
                    dims,
                    fields,
                    items,
                }
            }
            MX_CHAR => {
                let t = self.tag(at)?;
                Value::Text(self.chars(&t, &dims)?)
            }
            6..=15 if !complex => {
                let t = self.tag(at)?;
                Value::Numbers {
                    dims,
                    numbers: self.numbers(&t, count)?,
                }
            }
            _ => Value::Other,
        };
        self.depth -= 1;
        Ok((name, value))
    }

    fn numbers(&self, t: &Tag, count: usize) -> Result<Numbers, Error> {
        let width = match t.kind {
            MI_INT8 | MI_UINT8 => 1,
            MI_INT16 | MI_UINT16 => 2,
            MI_INT32 | MI_UINT32 | MI_SINGLE => 4,
            MI_DOUBLE | MI_INT64 | MI_UINT64 => 8,
            k => return Err(format!("numbers stored as MAT type {k}")),
        };
        if t.len < count.saturating_mul(width) {
            return Err(format!(
                "an array of {count} numbers holds only {} bytes",
                t.len
            ));
        }
        let sample = match t.kind {
            MI_INT16 => Some(SampleType::I16),
            MI_UINT16 => Some(SampleType::U16),
            MI_INT32 => Some(SampleType::I32),
            MI_SINGLE => Some(SampleType::F32),
            MI_DOUBLE => Some(SampleType::F64),
            _ => None,
        };
        if let (true, Some(sample)) = (self.in_file && count > DECODE_AT_ONCE, sample) {
            return Ok(Numbers::InFile {
                offset: t.start,
                sample,
                count,
                big_endian: self.big_endian,
            });
        }
        let b = &self.bytes[t.start..t.start + count * width];
        let be = self.big_endian;
        let word = |c: &[u8]| -> u64 {
            let mut a = [0u8; 8];
            if be {
                a[8 - c.len()..].copy_from_slice(c);
                u64::from_be_bytes(a)
            } else {
                a[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(a)
            }
        };
        let values = b
            .chunks_exact(width)
            .map(|c| {
                let w = word(c);
                match t.kind {
                    MI_INT8 => w as u8 as i8 as f64,
                    MI_UINT8 => w as u8 as f64,
                    MI_INT16 => w as u16 as i16 as f64,
                    MI_UINT16 => w as u16 as f64,
                    MI_INT32 => w as u32 as i32 as f64,
                    MI_UINT32 => w as u32 as f64,
                    MI_SINGLE => f32::from_bits(w as u32) as f64,
                    MI_DOUBLE => f64::from_bits(w),
                    MI_INT64 => w as i64 as f64,
                    _ => w as f64,
                }
            })
            .collect();
        Ok(Numbers::Decoded(values))
    }

    /// A char array's text: rows joined by newlines (MATLAB stores columns first).
    fn chars(&self, t: &Tag, dims: &[usize]) -> Result<String, Error> {
        let b = &self.bytes[t.start..t.start + t.len];
        let units: Vec<char> = match t.kind {
            MI_UTF8 | MI_UINT8 | MI_INT8 => return Ok(String::from_utf8_lossy(b).into_owned()),
            MI_UINT16 | MI_UTF16 => {
                let u: Vec<u16> = (b.chunks_exact(2))
                    .map(|c| {
                        if self.big_endian {
                            u16::from_be_bytes([c[0], c[1]])
                        } else {
                            u16::from_le_bytes([c[0], c[1]])
                        }
                    })
                    .collect();
                char::decode_utf16(u)
                    .map(|c| c.unwrap_or('\u{fffd}'))
                    .collect()
            }
            k => return Err(format!("text stored as MAT type {k}")),
        };
        let rows = dims.first().copied().unwrap_or(1).max(1);
        if rows == 1 {
            return Ok(units.into_iter().collect());
        }
        let cols = units.len() / rows;
        Ok((0..rows)
            .map(|r| {
                (0..cols)
                    .map(|c| units[r + c * rows])
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }
}
