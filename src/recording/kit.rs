//! KIT (being written this session: this module is replaced whole).

use std::path::Path;

use super::{ReadError, Recording};

/// Whether a file's first bytes (up to 64) are this format.
pub fn sniff(_head: &[u8]) -> bool {
    false
}

/// Whether `path` is this format through its name, a file beside it or a folder holding it.
pub fn is_companion(_path: &Path) -> bool {
    false
}

pub fn open(path: &Path) -> Result<Recording, ReadError> {
    Err(ReadError::invalid(path, "KIT files are not read yet"))
}
