//! The formats ede reads, listed once: the file dialog, `Recording::open` and the messages
//! take them from here.

use std::path::Path;

use super::{
    OpenOptions, ReadError, Recording, ant, bids, brainvision, bti, csv, ctf, curry, edf, eeglab,
    egi_raw, fif, kit, mff, neuroscan, nihon_kohden, persyst, wfdb, xdf,
};

/// A file format ede reads. Adding one is a module with an `open` and a line in [`READERS`].
pub struct Reader {
    /// What the user reads in messages and the file dialog.
    pub name: &'static str,
    /// Extensions (lower case) of the files a user may pick to open it.
    pub extensions: &'static [&'static str],
    /// Whether a file's first bytes (up to 64) are this format; `None` for formats known by
    /// their name only.
    pub sniff: Option<fn(&[u8]) -> bool>,
    /// The error when a file's name says this format and its first bytes do not.
    pub signature: &'static str,
    /// Whether `path` belongs to this format through a file beside it (WFDB's `.dat` with
    /// its `.hea`, BrainVision's `.eeg` with its `.vhdr`).
    pub companion: Option<fn(&Path) -> bool>,
    pub open: fn(&Path, &OpenOptions) -> Result<Recording, ReadError>,
}

/// Every format ede reads, in the order they are tried.
pub const READERS: &[Reader] = &[
    Reader {
        name: "EDF/EDF+/BDF/BDF+",
        extensions: &["edf", "bdf", "rec"],
        sniff: Some(edf::looks_like_edf),
        signature: "not an EDF/BDF file: the header does not start with the EDF version \"0\" \
                    or the BDF marker",
        companion: None,
        open: |p, _| edf::open(p),
    },
    Reader {
        name: "FIF",
        extensions: &["fif"],
        sniff: Some(fif::sniff),
        signature: "not a FIF file: it does not start with a file id tag",
        companion: None,
        open: |p, _| fif::open(p),
    },
    Reader {
        name: "XDF",
        extensions: &["xdf", "xdfz"],
        sniff: Some(xdf::sniff),
        signature: "not an XDF file: it does not start with \"XDF:\"",
        companion: None,
        open: |p, o| xdf::open(p, o.xdf_stream.as_deref()),
    },
    Reader {
        name: "WFDB",
        extensions: &["hea", "dat", "atr"],
        sniff: None,
        signature: "",
        companion: Some(wfdb::is_wfdb_path),
        open: |p, _| wfdb::open(p),
    },
    Reader {
        name: "Nihon Kohden",
        extensions: &["eeg", "pnt", "log", "21e"],
        sniff: Some(nihon_kohden::sniff),
        signature: "not a Nihon Kohden EEG file: it does not start with a Nihon Kohden device name",
        companion: Some(nihon_kohden::is_companion),
        open: |p, _| nihon_kohden::open(p),
    },
    Reader {
        name: "BrainVision",
        extensions: &["vhdr", "vmrk", "eeg"],
        sniff: Some(brainvision::sniff),
        signature: "not a BrainVision header: it does not start with \"Brain Vision Data \
                    Exchange Header File\"",
        companion: Some(brainvision::is_companion),
        open: |p, _| brainvision::open(p),
    },
    Reader {
        name: "4D/BTi",
        extensions: &[],
        sniff: None,
        signature: "",
        companion: Some(bti::is_data_file),
        open: |p, _| bti::open(p),
    },
    Reader {
        name: "EEGLAB",
        extensions: &["set", "fdt"],
        sniff: None,
        signature: "",
        companion: Some(eeglab::is_companion),
        open: |p, _| eeglab::open(p),
    },
    Reader {
        name: "Neuroscan CNT",
        extensions: &["cnt"],
        sniff: Some(neuroscan::sniff),
        signature: "not a CNT file: it starts neither with Neuroscan's \"Version 3.0\" nor with \
                    ANT's RIFF header",
        companion: Some(neuroscan::is_companion),
        open: |p, _| neuroscan::open(p),
    },
    Reader {
        name: "ANT Neuro CNT",
        extensions: &[],
        sniff: Some(ant::sniff),
        signature: "",
        companion: Some(ant::is_companion),
        open: |p, _| ant::open(p),
    },
    Reader {
        name: "EGI MFF",
        extensions: &[],
        sniff: None,
        signature: "",
        companion: Some(mff::is_companion),
        open: |p, _| mff::open(p),
    },
    Reader {
        name: "EGI simple binary",
        extensions: &["raw"],
        sniff: None,
        signature: "",
        companion: Some(egi_raw::is_companion),
        open: |p, _| egi_raw::open(p),
    },
    Reader {
        name: "CTF",
        extensions: &[],
        sniff: None,
        signature: "",
        companion: Some(ctf::is_companion),
        open: |p, _| ctf::open(p),
    },
    Reader {
        name: "Persyst",
        extensions: &["lay"],
        sniff: Some(persyst::sniff),
        signature: "not a Persyst layout: it has no [FileInfo] section",
        companion: Some(persyst::is_companion),
        open: |p, _| persyst::open(p),
    },
    Reader {
        name: "Curry",
        extensions: &["cdt", "dap", "dpa", "rs3", "cef", "ceo"],
        sniff: None,
        signature: "",
        companion: Some(curry::is_companion),
        open: |p, _| curry::open(p),
    },
    Reader {
        name: "KIT/Yokogawa",
        extensions: &["sqd", "con"],
        sniff: None,
        signature: "",
        companion: Some(kit::is_companion),
        open: |p, _| kit::open(p),
    },
    Reader {
        name: "CSV",
        extensions: &["csv", "tsv", "txt"],
        sniff: None,
        signature: "",
        companion: None,
        open: |p, o| csv::open(p, o.csv_fs),
    },
];

impl Recording {
    /// Opens any supported file: the format is recognised from its first bytes, else from a
    /// file beside it (a WFDB record's `.hea`, a BrainVision set's `.vhdr`), else from its
    /// extension (see [`READERS`]).
    pub fn open(path: &Path, options: &OpenOptions) -> Result<Recording, ReadError> {
        if let Some(r) = READERS
            .iter()
            .find(|r| r.companion.is_some_and(|c| c(path)))
        {
            return (r.open)(path, options);
        }
        let mut head = [0u8; 64];
        let n = {
            use std::io::Read;
            let mut f = std::fs::File::open(path).map_err(|e| ReadError::io(path, e))?;
            if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
                let why = if bids::is_dataset(path) {
                    "is a BIDS dataset, not one recording: `ede FOLDER` lists its runs, and the \
                     batch commands take it with --subject/--task filters"
                } else {
                    "is a folder, not a recording (ede opens folders that are one: CTF's .ds, \
                     EGI's .mff, and BIDS datasets)"
                };
                return Err(ReadError::invalid(path, why));
            }
            f.read(&mut head).map_err(|e| ReadError::io(path, e))?
        };
        if n == 0 {
            return Err(ReadError::invalid(path, "the file is empty"));
        }
        if let Some(r) = READERS
            .iter()
            .find(|r| r.sniff.is_some_and(|s| s(&head[..n])))
        {
            return (r.open)(path, options);
        }
        let ext = (path.extension())
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        match READERS
            .iter()
            .find(|r| r.extensions.contains(&ext.as_str()))
        {
            Some(r) if r.sniff.is_none() => (r.open)(path, options),
            Some(r) => Err(ReadError::invalid(path, r.signature)),
            None => {
                let names: Vec<&str> = READERS.iter().map(|r| r.name).collect();
                Err(ReadError::invalid(
                    path,
                    format!("unknown file format (ede reads {})", names.join(", ")),
                ))
            }
        }
    }
}
