//! The io benchmark's recording as BrainVision and FIF: the same channels and samples as its
//! EDF (16-bit, 0.1 uV steps), each generated once and reused.

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
