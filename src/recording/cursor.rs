//! A reader over a binary header's bytes that says where it ran out: the headers of 4D, CTF
//! and KIT files are fixed layouts of numbers and NUL-padded text, big- or little-endian.

use std::path::Path;

use super::ReadError;

pub(crate) struct Cursor<'a> {
    pub bytes: &'a [u8],
    pub at: usize,
    pub path: &'a Path,
    /// What the bytes are, for the error ("config", "data file's header").
    pub what: &'static str,
    pub big_endian: bool,
}

macro_rules! number {
    ($name:ident, $t:ty) => {
        pub fn $name(&mut self) -> Result<$t, ReadError> {
            let b = self.array()?;
            Ok(if self.big_endian {
                <$t>::from_be_bytes(b)
            } else {
                <$t>::from_le_bytes(b)
            })
        }
    };
}

impl<'a> Cursor<'a> {
    pub fn big_endian(bytes: &'a [u8], at: usize, path: &'a Path, what: &'static str) -> Self {
        Cursor {
            bytes,
            at,
            path,
            what,
            big_endian: true,
        }
    }

    pub fn little_endian(bytes: &'a [u8], at: usize, path: &'a Path, what: &'static str) -> Self {
        Cursor {
            big_endian: false,
            ..Self::big_endian(bytes, at, path, what)
        }
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], ReadError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(ReadError::invalid(
                self.path,
                format!(
                    "the {} is truncated: {n} bytes wanted at byte {}, the file has {}",
                    self.what,
                    self.at,
                    self.bytes.len()
                ),
            ));
        };
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    pub fn skip(&mut self, n: usize) -> Result<(), ReadError> {
        self.take(n).map(|_| ())
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], ReadError> {
        Ok(self.take(N)?.try_into().expect("N bytes"))
    }

    number!(i16, i16);
    number!(u16, u16);
    number!(i32, i32);
    number!(u32, u32);
    number!(f32, f32);
    number!(f64, f64);

    /// A NUL-terminated text field of `n` bytes, as it stands (not trimmed).
    pub fn nul_text(&mut self, n: usize) -> Result<String, ReadError> {
        let b = self.take(n)?;
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        Ok(String::from_utf8_lossy(&b[..end]).into_owned())
    }
}
