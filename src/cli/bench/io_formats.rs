//! The io benchmark's recording as BrainVision, FIF, 4D and EEGLAB: the same channels and
//! samples as its EDF (16-bit, 0.1 uV steps; EEGLAB's float32), each generated once and reused.

use std::io::Write;
use std::path::Path;

use super::io::Synth;

fn writer(path: &Path) -> anyhow::Result<std::io::BufWriter<std::fs::File>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    Ok(std::io::BufWriter::with_capacity(
        1 << 22,
        std::fs::File::create(path)?,
    ))
}

fn has_size(path: &Path, bytes: usize) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() as usize == bytes)
}

/// One second of every channel, multiplexed (all channels of sample 0, then of sample 1).
fn second(synth: &mut Synth, channels: usize, fs: usize, big_endian: bool, out: &mut [u8]) {
    let mut values = vec![0i16; channels * fs];
    for c in 0..channels {
        for i in 0..fs {
            values[i * channels + c] = synth.next(c, i);
        }
    }
    for (o, v) in out.chunks_exact_mut(2).zip(values) {
        o.copy_from_slice(&if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
    }
}

/// `vhdr` with its `.eeg` (INT_16, multiplexed, 0.1 uV) and `.vmrk`.
pub fn brainvision(vhdr: &Path, channels: usize, seconds: usize, fs: usize) -> anyhow::Result<()> {
    let eeg = vhdr.with_extension("eeg");
    let vmrk = vhdr.with_extension("vmrk");
    let name = |p: &Path| {
        p.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    };
    let mut h = format!(
        "Brain Vision Data Exchange Header File Version 1.0\r\n\r\n[Common Infos]\r\n\
         Codepage=UTF-8\r\nDataFile={}\r\nMarkerFile={}\r\nDataFormat=BINARY\r\n\
         DataOrientation=MULTIPLEXED\r\nNumberOfChannels={channels}\r\nSamplingInterval={}\r\n\r\n\
         [Binary Infos]\r\nBinaryFormat=INT_16\r\n\r\n[Channel Infos]\r\n",
        name(&eeg),
        name(&vmrk),
        1e6 / fs as f64
    );
    for c in 0..channels {
        h += &format!("Ch{}=EEG{c:02},,0.1,µV\r\n", c + 1);
    }
    std::fs::write(vhdr, h)?;
    std::fs::write(
        &vmrk,
        format!(
            "Brain Vision Data Exchange Marker File, Version 1.0\r\n\r\n[Common Infos]\r\n\
             Codepage=UTF-8\r\nDataFile={}\r\n\r\n[Marker Infos]\r\n\
             Mk1=New Segment,,1,1,0,20260101220000000000\r\n",
            name(&eeg)
        ),
    )?;
    let bytes = channels * fs * 2;
    if has_size(&eeg, bytes * seconds) {
        return Ok(());
    }
    eprintln!(
        "generating {} ({:.2} GB)…",
        eeg.display(),
        (bytes * seconds) as f64 / 1e9
    );
    let mut w = writer(&eeg)?;
    let mut synth = Synth::new(fs);
    let mut buf = vec![0u8; bytes];
    for _ in 0..seconds {
        second(&mut synth, channels, fs, false, &mut buf);
        w.write_all(&buf)?;
    }
    w.flush()?;
    Ok(())
}

/// A FIF raw file as Neuromag systems write one: the file id, the measurement info (EEG
/// channels in V with cal 1e-7) and one short data buffer per second.
pub fn fif(path: &Path, channels: usize, seconds: usize, fs: usize) -> anyhow::Result<()> {
    fn tag(out: &mut Vec<u8>, kind: i32, dtype: i32, data: &[u8]) {
        for v in [kind, dtype, data.len() as i32, 0] {
            out.extend(v.to_be_bytes());
        }
        out.extend(data);
    }
    let int = |v: i32| v.to_be_bytes().to_vec();
    let mut head = Vec::new();
    tag(&mut head, 100, 31, &[0u8; 20]); // FIFF_FILE_ID
    tag(&mut head, 101, 3, &int(-1)); // FIFF_DIR_POINTER: none
    tag(&mut head, 104, 3, &int(100)); // MEAS
    tag(&mut head, 104, 3, &int(101)); // MEAS_INFO
    tag(&mut head, 200, 3, &int(channels as i32));
    tag(&mut head, 201, 4, &(fs as f32).to_be_bytes());
    tag(&mut head, 204, 3, &[int(1_767_304_800), int(0)].concat());
    for c in 0..channels {
        let mut ch = Vec::with_capacity(96);
        ch.extend(int(c as i32 + 1)); // scanNo
        ch.extend(int(c as i32 + 1)); // logNo
        ch.extend(int(2)); // FIFFV_EEG_CH
        ch.extend(1f32.to_be_bytes()); // range
        ch.extend(1e-7f32.to_be_bytes()); // cal: 0.1 uV
        ch.extend(int(1)); // coil: EEG
        ch.extend([0u8; 48]); // loc
        ch.extend(int(107)); // FIFF_UNIT_V
        ch.extend(int(0));
        let mut name = format!("EEG{c:02}").into_bytes();
        name.resize(16, 0);
        ch.extend(name);
        tag(&mut head, 203, 30, &ch);
    }
    tag(&mut head, 105, 3, &int(101));
    tag(&mut head, 104, 3, &int(102)); // RAW_DATA
    let bytes = channels * fs * 2;
    let expected = head.len() + seconds * (16 + bytes) + 2 * 20;
    if has_size(path, expected) {
        return Ok(());
    }
    eprintln!(
        "generating {} ({:.2} GB)…",
        path.display(),
        expected as f64 / 1e9
    );
    let mut w = writer(path)?;
    w.write_all(&head)?;
    let mut synth = Synth::new(fs);
    let mut buf = vec![0u8; bytes];
    let mut header = Vec::with_capacity(16);
    for _ in 0..seconds {
        second(&mut synth, channels, fs, true, &mut buf);
        header.clear();
        for v in [300, 2, bytes as i32, 0] {
            header.extend(v.to_be_bytes());
        }
        w.write_all(&header)?;
        w.write_all(&buf)?;
    }
    let mut tail = Vec::new();
    tag(&mut tail, 105, 3, &int(102));
    tag(&mut tail, 105, 3, &int(100));
    w.write_all(&tail)?;
    w.flush()?;
    Ok(())
}

/// A 4D run: the data file (`data`, short samples, its header at the end) and a `config`
/// beside it naming channels A1, A2 ... as magnetometers of 0.1 fT a step, laid out as
/// `recording::bti` reads them.
pub fn bti(data: &Path, channels: usize, seconds: usize, fs: usize) -> anyhow::Result<()> {
    fn text(s: &str, n: usize) -> Vec<u8> {
        let mut b = s.as_bytes().to_vec();
        b.resize(n, 0);
        b
    }
    fn pad8(b: &mut Vec<u8>) {
        b.resize(b.len().div_ceil(8) * 8, 0);
    }
    let identity: Vec<u8> = (0..16)
        .flat_map(|k| (if k % 5 == 0 { 1.0f64 } else { 0.0 }).to_be_bytes())
        .collect();
    let mut cfg = Vec::new();
    cfg.extend(2i16.to_be_bytes()); // version
    cfg.extend(text("ede bench", 32 + 16)); // site, host
    cfg.extend(1i16.to_be_bytes()); // sys_type
    cfg.extend(0i32.to_be_bytes()); // sys_options
    cfg.extend(50i16.to_be_bytes()); // supply
    cfg.extend((channels as i16).to_be_bytes());
    cfg.extend(1f32.to_be_bytes());
    cfg.extend(1f32.to_be_bytes());
    cfg.extend(1i16.to_be_bytes()); // sensors: the device transform
    cfg.extend(0i16.to_be_bytes()); // user blocks
    cfg.extend([0u8; 2 + 2 + 4 + 32]);
    cfg.extend(&identity);
    for c in 0..channels {
        cfg.extend(text(&format!("A{}", c + 1), 16));
        cfg.extend((c as i16 + 1).to_be_bytes());
        cfg.extend(1u16.to_be_bytes()); // MEG
        cfg.extend((c as i16).to_be_bytes());
        cfg.extend([0u8; 2]);
        cfg.extend(1f32.to_be_bytes()); // gain
        cfg.extend(1e-16f32.to_be_bytes()); // units per bit: 0.1 fT
        cfg.extend([0u8; 16 + 8 + 4 + 32]);
        pad8(&mut cfg);
        cfg.extend([0u8; 40 + 8]);
        cfg.extend(&identity);
        cfg.extend(0i16.to_be_bytes());
        cfg.extend(0i16.to_be_bytes()); // loops
        cfg.extend([0u8; 4 + 32]);
        pad8(&mut cfg);
    }
    let config = data.with_file_name("config");
    if let Some(dir) = data.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&config, cfg)?;
    let bytes = channels * fs * 2;
    let samples = bytes * seconds;
    let mut header = Vec::new();
    header.extend(1i16.to_be_bytes());
    header.extend(text("PDF", 5));
    header.push(0);
    header.extend(1i16.to_be_bytes()); // short samples
    header.extend(1i16.to_be_bytes());
    for v in [1i32, 1, 0, 0] {
        header.extend(v.to_be_bytes()); // epochs, input epochs, events, fixed events
    }
    header.extend((1.0 / fs as f32).to_be_bytes());
    header.extend(text("s", 16));
    header.extend(1i32.to_be_bytes()); // processes
    header.extend((channels as i16).to_be_bytes());
    header.extend([0u8; 2 + 4 + 4 + 2 + 2 + 4 + 20]);
    pad8(&mut header);
    header.extend(((fs * seconds) as i32).to_be_bytes());
    header.extend([0u8; 52]);
    for c in 0..channels {
        header.extend(text(&format!("A{}", c + 1), 16));
        header.extend((c as i16 + 1).to_be_bytes());
        header.extend(0i16.to_be_bytes());
        header.extend(1f32.to_be_bytes()); // scale
        header.extend([0u8; 16 + 2 + 6 + 16]);
        header.extend((c as i32).to_be_bytes()); // slot
        header.extend([0u8; 4 + 4 + 4 + 24]);
    }
    header.extend([0u8; 4 + 20 + 4 + 32]);
    header.extend(1_767_304_800i32.to_be_bytes());
    header.extend([0u8; 256 + 4 + 32]);
    pad8(&mut header);
    let header_at = samples.div_ceil(8) * 8;
    header.extend((header_at as u64).to_be_bytes());
    if has_size(data, header_at + header.len()) {
        return Ok(());
    }
    eprintln!(
        "generating {} ({:.2} GB)…",
        data.display(),
        samples as f64 / 1e9
    );
    let mut w = writer(data)?;
    let mut synth = Synth::new(fs);
    let mut buf = vec![0u8; bytes];
    for _ in 0..seconds {
        second(&mut synth, channels, fs, true, &mut buf);
        w.write_all(&buf)?;
    }
    w.write_all(&vec![0u8; header_at - samples])?;
    w.write_all(&header)?;
    w.flush()?;
    Ok(())
}

/// An EEGLAB dataset: a `.set` (MAT-file level 5) naming a `.fdt` of float32 microvolts,
/// channels multiplexed, as EEGLAB saves a dataset in two files.
pub fn eeglab(set: &Path, channels: usize, seconds: usize, fs: usize) -> anyhow::Result<()> {
    /// A MAT level-5 element: type, size, data padded to 8 bytes.
    fn element(out: &mut Vec<u8>, kind: u32, data: &[u8]) {
        out.extend(kind.to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        out.extend(data);
        out.resize(out.len().div_ceil(8) * 8, 0);
    }
    /// A variable: a 1 x n double or char array named `name`.
    fn variable(out: &mut Vec<u8>, name: &str, class: u8, values: &[u8], n: usize) {
        let mut m = Vec::new();
        element(&mut m, 6, &[class as u32, 0].map(u32::to_le_bytes).concat()); // flags
        element(&mut m, 5, &[1i32, n as i32].map(i32::to_le_bytes).concat()); // dims
        element(&mut m, 1, name.as_bytes());
        element(&mut m, if class == 4 { 4 } else { 9 }, values); // u16 chars or doubles
        element(out, 14, &m);
    }
    let fdt = set.with_extension("fdt");
    let fdt_name = fdt.file_name().unwrap_or_default().to_string_lossy();
    let mut mat = b"MATLAB 5.0 MAT-file, written by ede bench io".to_vec();
    mat.resize(116, b' ');
    mat.extend([0u8; 8]);
    mat.extend(0x0100u16.to_le_bytes());
    mat.extend(b"IM");
    for (name, value) in [
        ("nbchan", channels as f64),
        ("pnts", (fs * seconds) as f64),
        ("trials", 1.0),
        ("srate", fs as f64),
    ] {
        variable(&mut mat, name, 6, &value.to_le_bytes(), 1);
    }
    let chars: Vec<u8> = fdt_name.encode_utf16().flat_map(u16::to_le_bytes).collect();
    variable(&mut mat, "data", 4, &chars, fdt_name.encode_utf16().count());
    if let Some(dir) = set.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(set, mat)?;
    let bytes = channels * fs * 4;
    if has_size(&fdt, bytes * seconds) {
        return Ok(());
    }
    eprintln!(
        "generating {} ({:.2} GB)…",
        fdt.display(),
        (bytes * seconds) as f64 / 1e9
    );
    let mut w = writer(&fdt)?;
    let mut synth = Synth::new(fs);
    let mut shorts = vec![0u8; channels * fs * 2];
    let mut buf = Vec::with_capacity(bytes);
    for _ in 0..seconds {
        second(&mut synth, channels, fs, false, &mut shorts);
        buf.clear();
        for v in shorts.chunks_exact(2) {
            let uv = i16::from_le_bytes([v[0], v[1]]) as f32 * 0.1;
            buf.extend(uv.to_le_bytes());
        }
        w.write_all(&buf)?;
    }
    w.flush()?;
    Ok(())
}
