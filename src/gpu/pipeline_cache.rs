//! The driver's compiled pipelines kept on disk between runs, so that no analysis waits for a
//! compile it already did in an earlier process. On a fresh H100 the Cross-ApEn pipelines alone
//! take 0.1-0.2 s to compile, several times the first subject's own work.
//!
//! wgpu's `PipelineCache` (Vulkan only, `Features::PIPELINE_CACHE`) is handed the bytes saved
//! last time when the device opens, every pipeline is created through it, and its bytes are
//! written back after a kernel family compiles something new. One file per adapter in the
//! user's cache folder (`EDE_CACHE_DIR`, else `$XDG_CACHE_HOME/ede`, else `~/.cache/ede`),
//! its name keyed by the adapter, the driver and ede's version; `EDE_PIPELINE_CACHE=0` turns it
//! off. wgpu checks the bytes' header against the adapter and the driver's cache identity;
//! ede adds a length and a CRC-32 of its own, since wgpu's header carries no checksum and the
//! driver is handed whatever passes.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use eframe::wgpu;

/// The file's first bytes: ede's own header, then the length and CRC-32 of wgpu's bytes.
const MAGIC: &[u8; 8] = b"EDEPIPE1";
const HEADER: usize = 8 + 8 + 4;

pub(crate) struct DiskPipelineCache {
    pub(crate) cache: wgpu::PipelineCache,
    path: PathBuf,
    /// Bytes handed to the driver at the start (0: none, or none whole).
    loaded: usize,
    /// Length of the bytes last read or written: a save that finds the same length skips the
    /// write (the driver's cache only grows within a process).
    saved_len: Mutex<usize>,
}

/// The feature a device is opened with for the cache, where the adapter has it.
pub(crate) fn feature(adapter: &wgpu::Adapter) -> wgpu::Features {
    adapter.features() & wgpu::Features::PIPELINE_CACHE
}

/// The cache folder: `EDE_CACHE_DIR`, else `$XDG_CACHE_HOME/ede`, else `~/.cache/ede`; none
/// when `EDE_PIPELINE_CACHE=0` or no home is known.
pub(crate) fn folder() -> Option<PathBuf> {
    if std::env::var("EDE_PIPELINE_CACHE").is_ok_and(|v| v.trim() == "0") {
        return None;
    }
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var("EDE_CACHE_DIR") {
        return Some(PathBuf::from(dir));
    }
    var("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| var("HOME").map(|h| Path::new(&h).join(".cache")))
        .map(|d| d.join("ede"))
}

/// `pipelines-VENDOR-DEVICE-HASH.bin`, HASH of the adapter's name, driver and ede's version.
fn file_name(info: &wgpu::AdapterInfo) -> String {
    // FNV-1a: stable across runs and builds, unlike std's hasher.
    let key = format!(
        "{}|{}|{}|{:?}|{}",
        info.name,
        info.driver,
        info.driver_info,
        info.backend,
        env!("CARGO_PKG_VERSION")
    );
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    format!(
        "pipelines-{:04x}-{:04x}-{hash:016x}.bin",
        info.vendor, info.device
    )
}

/// wgpu's bytes from a file written by `wrap`, if it is whole.
fn unwrap(file: &[u8]) -> Option<&[u8]> {
    let (header, data) = file.split_at_checked(HEADER)?;
    let len = u64::from_le_bytes(header[8..16].try_into().ok()?);
    let crc = u32::from_le_bytes(header[16..20].try_into().ok()?);
    (&header[..8] == MAGIC && len == data.len() as u64 && crc32(data) == crc).then_some(data)
}

fn wrap(data: &[u8]) -> Vec<u8> {
    let mut file = Vec::with_capacity(HEADER + data.len());
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(&(data.len() as u64).to_le_bytes());
    file.extend_from_slice(&crc32(data).to_le_bytes());
    file.extend_from_slice(data);
    file
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = flate2::Crc::new();
    crc.update(data);
    crc.sum()
}

impl DiskPipelineCache {
    /// The cache of a device opened with `feature`, filled from this adapter's file in
    /// `folder` if there is a whole one; none without the feature or a folder.
    pub(crate) fn open(
        device: &wgpu::Device,
        info: &wgpu::AdapterInfo,
        folder: Option<PathBuf>,
    ) -> Option<Self> {
        if !device.features().contains(wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        wgpu::util::pipeline_cache_key(info)?;
        let path = folder?.join(file_name(info));
        let file = std::fs::read(&path).unwrap_or_default();
        let data = unwrap(&file);
        // SAFETY: the bytes are what `PipelineCache::get_data` returned on an adapter of the
        // same name, driver and ede version (the file name) and arrived whole (the CRC);
        // wgpu checks its own header against this adapter and the driver's cache identity,
        // and with `fallback` starts an empty cache where they do not match.
        let cache = unsafe {
            device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("ede pipelines"),
                data,
                fallback: true,
            })
        };
        let loaded = data.map_or(0, <[u8]>::len);
        Some(DiskPipelineCache {
            cache,
            path,
            loaded,
            saved_len: Mutex::new(loaded),
        })
    }

    /// Writes the cache's bytes if they grew since the last read or write: to a file beside
    /// the cache's, then renamed over it, so that a reader never sees half a file and
    /// processes side by side each write a whole one. A cache that cannot be written is left
    /// as it was: it only saves time.
    pub(crate) fn save(&self) {
        let Some(data) = self.cache.get_data() else {
            return;
        };
        let Ok(mut saved) = self.saved_len.lock() else {
            return;
        };
        if data.len() == *saved {
            return;
        }
        let Some(dir) = self.path.parent() else {
            return;
        };
        // Unique to this write: contexts side by side in one process (tests) write too.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let write = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = (self.path).with_extension(format!("{}-{write}.tmp", std::process::id()));
        let written = std::fs::create_dir_all(dir)
            .and_then(|()| std::fs::write(&temp, wrap(&data)))
            .and_then(|()| std::fs::rename(&temp, &self.path));
        if written.is_ok() {
            *saved = data.len();
        } else {
            let _ = std::fs::remove_file(&temp);
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn loaded(&self) -> usize {
        self.loaded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_files_are_handed_to_the_driver() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
        let file = wrap(&data);
        assert_eq!(unwrap(&file), Some(&data[..]));
        // Cut anywhere, one bit flipped, or padded: refused.
        for cut in [0, 5, HEADER - 1, HEADER, HEADER + 10, file.len() - 1] {
            assert_eq!(unwrap(&file[..cut]), None, "cut at {cut}");
        }
        for at in [0, 9, 17, HEADER, file.len() - 1] {
            let mut bad = file.clone();
            bad[at] ^= 4;
            assert_eq!(unwrap(&bad), None, "bit flipped at {at}");
        }
        let mut longer = file.clone();
        longer.push(0);
        assert_eq!(unwrap(&longer), None);
        assert_eq!(unwrap(&wrap(&[])), Some(&[][..]));
    }

    #[test]
    fn file_names_follow_the_adapter_and_driver() {
        let info = |driver: &str| wgpu::AdapterInfo {
            name: "GPU".into(),
            vendor: 0x10de,
            device: 0x2330,
            driver: driver.into(),
            driver_info: "580".into(),
            ..wgpu::AdapterInfo::new(wgpu::DeviceType::DiscreteGpu, wgpu::Backend::Vulkan)
        };
        let a = file_name(&info("NVIDIA"));
        assert!(
            a.starts_with("pipelines-10de-2330-") && a.ends_with(".bin"),
            "{a}"
        );
        assert_eq!(a, file_name(&info("NVIDIA")));
        assert_ne!(a, file_name(&info("other")));
    }
}
