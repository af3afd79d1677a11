use super::*;

/// A res4 of `channels` (name, sensor type, proper gain, q-gain, coil centre in cm) with
/// `nsamp` samples per trial at 1200 Hz.
fn res4(channels: &[(&str, i16, f64, f64, [f64; 3])], nsamp: i32) -> Vec<u8> {
    let mut b = vec![0u8; RUN_DESCRIPTION_AT];
    b[..8].copy_from_slice(b"MEG42RS\0");
    b[778..783].copy_from_slice(b"09:36");
    b[1033..1044].copy_from_slice(b"29-Apr-2013");
    b[1288..1292].copy_from_slice(&nsamp.to_be_bytes());
    b[1292..1294].copy_from_slice(&(channels.len() as i16).to_be_bytes());
    b[1296..1304].copy_from_slice(&1200f64.to_be_bytes());
    b.extend(0i16.to_be_bytes()); // no filters
    for (name, ..) in channels {
        let mut n = [0u8; NAME_BYTES];
        n[..name.len()].copy_from_slice(name.as_bytes());
        b.extend(n);
    }
    for &(_, kind, gain, qgain, pos) in channels {
        let mut c = vec![0u8; CHANNEL_BYTES];
        c[..2].copy_from_slice(&kind.to_be_bytes());
        c[8..16].copy_from_slice(&gain.to_be_bytes());
        c[16..24].copy_from_slice(&qgain.to_be_bytes());
        for (i, v) in pos.iter().chain(&[0.0]).chain(&[0.0, 0.0, 1.0]).enumerate() {
            c[48 + 8 * i..56 + 8 * i].copy_from_slice(&v.to_be_bytes());
        }
        b.extend(c);
    }
    b.extend(0i16.to_be_bytes()); // no compensation
    b
}

fn write_run(dir: &Path, res4: &[u8], meg4: &[u8]) -> PathBuf {
    let ds = dir.join("run.ds");
    std::fs::create_dir(&ds).unwrap();
    std::fs::write(ds.join("run.res4"), res4).unwrap();
    std::fs::write(ds.join("run.meg4"), meg4).unwrap();
    ds
}

#[test]
fn a_small_run_reads_back_trial_by_trial() {
    let dir = tempfile::tempdir().unwrap();
    let channels = [
        ("MZC01-4304", MEG, -2.0, 0.5e15, [1.0, 2.0, 3.0]),
        ("UPPT001", STIM, 1.0, 1.0, [0.0; 3]),
        (CLOCK, 17, 1.0, 1.0, [0.0; 3]),
    ];
    // Two trials of three samples; the clock's 0 in the second ends the data there.
    let trials: [[[i32; 3]; 3]; 2] = [
        [[1, 2, 3], [0, 0, 5], [1, 2, 3]],
        [[4, 5, 6], [5, 0, 0], [4, 5, 0]],
    ];
    let mut meg4 = b"MEG41CP\0".to_vec();
    meg4.extend(
        trials
            .iter()
            .flatten()
            .flatten()
            .flat_map(|v| v.to_be_bytes()),
    );
    let ds = write_run(dir.path(), &res4(&channels, 3), &meg4);
    assert!(is_companion(&ds));
    assert!(is_companion(&ds.join("run.meg4")));
    assert!(!is_companion(dir.path()));
    let rec = open(&ds.join("run.res4")).unwrap();
    assert_eq!(rec.signals.len(), 3);
    assert_eq!(rec.signals[0].label, "MZC01-4304");
    assert_eq!(rec.signals[0].kind, ChannelType::Mag);
    assert_eq!(rec.signals[0].unit, "T");
    assert_eq!(rec.signals[1].kind, ChannelType::Stim);
    assert_eq!(rec.signals[2].kind, ChannelType::Misc);
    assert_eq!(rec.signals[0].samples, 5);
    assert_eq!(
        rec.start,
        NaiveDate::from_ymd_opt(2013, 4, 29)
            .unwrap()
            .and_hms_opt(9, 36, 0)
            .unwrap()
    );
    // A count over -2 x 0.5e15 T: -1 fT.
    let meg = rec.read_all(0).unwrap();
    for (v, want) in meg.iter().zip([-1.0, -2.0, -3.0, -4.0, -5.0]) {
        assert!((*v as f64 - want * 1e-15).abs() < 1e-21, "{v}");
    }
    assert_eq!(rec.read_all(1).unwrap(), [0.0, 0.0, 5.0, 5.0, 0.0]);
    // Without a .hc the sensor sits in MNE's device frame.
    let p = rec.signals[0].position.unwrap();
    let want = apply(&ctf_to_device(), &Vector3::new(0.01, 0.02, 0.03));
    assert!((Vector3::from(p) - want).norm() < 1e-12);
    // A run over 2 GB goes on in NAME.1_meg4: read on after the first file's clock stop.
    let mut more = b"MEG41CP\0".to_vec();
    more.extend(
        [[7, 8, 9], [0; 3], [1; 3]]
            .iter()
            .flatten()
            .flat_map(|v: &i32| v.to_be_bytes()),
    );
    std::fs::write(ds.join("run.1_meg4"), more).unwrap();
    let rec = open(&ds).unwrap();
    let meg = rec.read_all(0).unwrap();
    for (v, want) in meg.iter().zip([-1., -2., -3., -4., -5., -7., -8., -9.]) {
        assert!((*v as f64 - want * 1e-15).abs() < 1e-21, "{meg:?}");
    }
}

#[test]
fn truncated_or_garbage_runs_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let channels = [("UPPT001", STIM, 1.0, 1.0, [0.0; 3])];
    let full = res4(&channels, 3);
    let ds = write_run(dir.path(), &full[..full.len() - 10], b"MEG41CP\0");
    assert!(open(&ds).is_err());
    std::fs::write(ds.join("run.res4"), b"garbage").unwrap();
    assert!(open(&ds).is_err());
    // A header without data.
    std::fs::write(ds.join("run.res4"), &full).unwrap();
    let err = open(&ds).unwrap_err().to_string();
    assert!(err.contains("no samples"), "{err}");
}

#[test]
fn coils_give_mne_head_frame() {
    let hc = "measured nasion coil position relative to dewar (cm):\n\tx = 6.72107\n\t\
              y = 6.5033\n\tz = -27.7205\nmeasured left ear coil position relative to \
              dewar (cm):\n\tx = -6.88573\n\ty = 4.21237\n\tz = -25.8999\nmeasured right \
              ear coil position relative to dewar (cm):\n\tx = 3.74269\n\ty = -7.63012\n\t\
              z = -26.3512\nmeasured nasion coil position relative to head (cm):\n\t\
              x = 11.7793\n\ty = 0\n\tz = 0\nmeasured left ear coil position relative to \
              head (cm):\n\tx = 0.356369\n\ty = 7.95147\n\tz = 0\nmeasured right ear coil \
              position relative to head (cm):\n\tx = -0.356369\n\ty = -7.95147\n\tz = 0\n";
    let coils = read_hc(hc).unwrap();
    assert_eq!(coils.len(), 6);
    let f = frames(&coils).unwrap();
    // MNE-Python's dev_head_t of testdata_ctf_short_discontinuous.ds.
    let want = [
        [0.99814231, -0.05392782, -0.02834999, 0.00103352],
        [0.04956735, 0.98935642, -0.13680988, 0.01315258],
        [0.0354261, 0.1351505, 0.99019156, 0.07365712],
    ];
    for (i, row) in want.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            assert!((f.device_to_head[(i, j)] - v).abs() < 1e-7, "{i} {j}");
        }
    }
}

#[test]
fn markers_parse_as_mne_reads_them() {
    let mrk = "PATH OF DATASET:\nx.ds\n\nNUMBER OF MARKERS:\n1\n\nCLASSGROUPID:\n3\nNAME:\n\
               stim\nCOMMENT:\n\nNUMBER OF SAMPLES:\n2\n\nLIST OF SAMPLES:\n\
               TRIAL NUMBER\t\tTIME FROM SYNC POINT (in seconds)\n  0\t+1.5\n  1\t-0.25\n";
    let m = read_markers(mrk).unwrap();
    assert_eq!(
        m,
        [("stim".to_string(), 0, 1.5), ("stim".to_string(), 1, -0.25)]
    );
    assert!(read_markers("NUMBER OF MARKERS:\nmany\n").is_err());
    assert_eq!(
        parse_start("", ""),
        NaiveDate::from_ymd_opt(1970, 1, 1)
            .unwrap()
            .and_hms_opt(0, 0, 0)
    );
    assert!(parse_start("29/04/2013", "09:36:05").is_some());
    assert!(parse_start("tomorrow", "09:36").is_none());
}
