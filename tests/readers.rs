//! Readers: every shared recording opens with the right facts; round trips through files the
//! tests write; damaged files give errors, never panics.

mod common;

use common::*;
use ede::recording::{Format, OpenOptions, Recording};

fn open(p: &std::path::Path) -> Recording {
    Recording::open(p, &OpenOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// (path, format, data signals, first signal rate, duration_s, annotations)
const SHARED: &[(&str, Format, usize, f64, f64, usize)] = &[
    (
        "edf/test_edf_overlapping_annotations.edf",
        Format::EdfPlusC,
        64,
        128.0,
        124.0,
        38,
    ),
    ("edf/chtypes_edf.edf", Format::EdfPlusC, 42, 200.0, 5.0, 8),
    // 5 annotations and the 13 steps of its Status channel (tests/real_files.rs).
    ("edf/test_reduced.edf", Format::EdfPlusC, 139, 1.0, 6.0, 18),
    // Nihon Kohden omits the 0 byte after time-keeping TALs: 2 real annotations, not 4.
    (
        "edf/nihonkohden_MB0400FU.edf",
        Format::EdfPlusD,
        25,
        200.0,
        29.0,
        2,
    ),
    ("edf/test_edfann.edf", Format::EdfPlusC, 0, 0.0, 0.0, 856),
    (
        "edf/test_generator_2.edf",
        Format::EdfPlusC,
        11,
        200.0,
        600.0,
        2,
    ),
    (
        "edf/SC4001EC-Hypnogram.edf",
        Format::EdfPlusC,
        0,
        0.0,
        0.0,
        154,
    ),
    (
        "edf/subsecond_starttime.edf",
        Format::EdfPlusC,
        3,
        512.0,
        5.0,
        2,
    ),
    (
        "edf/test_utf8_annotations.edf",
        Format::EdfPlusC,
        11,
        200.0,
        10.0,
        2,
    ),
    (
        "eeg/eeglab_sample_32ch_128hz.edf",
        Format::EdfPlusC,
        32,
        128.0,
        238.0,
        154,
    ),
    (
        "bdf/test_generator_2.bdf",
        Format::BdfPlusC,
        11,
        200.0,
        600.0,
        2,
    ),
    (
        "bdf/test_bdf_stim_channel.bdf",
        Format::Bdf,
        4,
        500.0,
        10.0,
        // Its Status channel's 9 triggers (tests/real_files.rs).
        9,
    ),
    (
        "bdf/multiple_annotation_chans.bdf",
        Format::BdfPlusC,
        19,
        125.0,
        247.0,
        10,
    ),
    (
        "ecg/mitdb/100",
        Format::Wfdb,
        2,
        360.0,
        650000.0 / 360.0,
        2274,
    ),
];

#[test]
fn every_shared_recording_opens_with_its_facts() {
    let Some(dir) = shared_data() else { return };
    for &(file, format, n, fs, duration, annotations) in SHARED {
        let rec = open(&dir.join(file));
        assert_eq!(rec.format, format, "{file}");
        assert_eq!(rec.signals.len(), n, "{file}");
        if n > 0 {
            assert_eq!(rec.signals[0].fs, fs, "{file}");
        }
        assert!(
            (rec.duration_s() - duration).abs() < 1e-6,
            "{file}: {}",
            rec.duration_s()
        );
        assert_eq!(rec.annotations.len(), annotations, "{file}");
        // Every signal decodes end to end.
        for (i, s) in rec.signals.iter().enumerate() {
            assert_eq!(rec.read_all(i).unwrap().len(), s.samples, "{file}");
        }
    }
}

#[test]
fn edf_and_bdf_twins_agree() {
    let Some(dir) = shared_data() else { return };
    let edf = open(&dir.join("edf/test_generator_2.edf"));
    let bdf = open(&dir.join("bdf/test_generator_2.bdf"));
    assert!(
        edf.warnings.iter().any(|w| w.contains("Latin-1")),
        "{:?}",
        edf.warnings
    );
    for (i, s) in edf.signals.iter().enumerate() {
        assert_eq!(s.label, bdf.signals[i].label);
        let a = edf.read_all(i).unwrap();
        let b = bdf.read_all(i).unwrap();
        // EDF quantises to 16 bits over the physical range: compare within two EDF steps.
        let step = (s.physical_max - s.physical_min) / 65535.0 * 2.0 + 1e-6;
        let worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs() as f64)
            .fold(0.0, f64::max);
        assert!(worst <= step, "{}: differ by {worst} > {step}", s.label);
    }
}

#[test]
fn edf_plus_d_keeps_gaps_and_subsecond_start() {
    let Some(dir) = shared_data() else { return };
    let rec = open(&dir.join("edf/nihonkohden_MB0400FU.edf"));
    assert!(rec.time_span_s() >= rec.duration_s());
    let records: usize = rec.segments.iter().map(|s| s.records).sum();
    assert_eq!(records, 29);
    let sub = open(&dir.join("edf/subsecond_starttime.edf"));
    assert!(
        sub.start.and_utc().timestamp_subsec_nanos() > 0,
        "{}",
        sub.start
    );
}

#[test]
fn mitbih_100_has_its_samples_and_beats() {
    let Some(dir) = shared_data() else { return };
    // A record opens from any of its files.
    for name in [
        "ecg/mitdb/100",
        "ecg/mitdb/100.hea",
        "ecg/mitdb/100.dat",
        "ecg/mitdb/100.atr",
    ] {
        let rec = open(&dir.join(name));
        assert_eq!(rec.signals[0].label, "MLII");
        assert_eq!(rec.signals[1].label, "V5");
        assert!(rec.signals.iter().all(|s| s.samples == 650_000));
        let beats = rec.annotations.iter().filter(|a| a.text == "N").count();
        assert!(beats > 2000, "{beats} normal beats");
        // The first samples of record 100 (MLII) are -0.145 mV.
        let mut v = [0f32; 3];
        rec.read(0, 0, &mut v).unwrap();
        assert!((v[0] + 0.145).abs() < 1e-6, "{v:?}");
    }
}

#[test]
fn edf_bdf_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    for (bdf, plus, format) in [
        (false, None, Format::Edf),
        (false, Some('C'), Format::EdfPlusC),
        (true, None, Format::Bdf),
        (true, Some('C'), Format::BdfPlusC),
    ] {
        let path = dir.path().join(if bdf { "rt.bdf" } else { "rt.edf" });
        let signals = two_signals(5, bdf);
        write_edf(
            &path,
            bdf,
            plus,
            1.0,
            &signals,
            None,
            &[(1.25, "Eyes closed")],
        );
        let rec = open(&path);
        assert_eq!(rec.format, format);
        assert_eq!(rec.signals.len(), 2);
        assert_eq!(rec.duration_s(), 5.0);
        assert_eq!(rec.signals[0].fs, 100.0);
        if plus.is_some() {
            assert_eq!(rec.annotations.len(), 1);
            assert_eq!(rec.annotations[0].text, "Eyes closed");
            assert_eq!(rec.annotations[0].onset, 1.25);
        }
        for (i, s) in signals.iter().enumerate() {
            let v = rec.read_all(i).unwrap();
            for (k, (&got, &d)) in v.iter().zip(&s.digital).enumerate() {
                let want = physical(s, d);
                assert!(
                    (got - want).abs() <= want.abs() * 1e-6 + 1e-6,
                    "{format} {i} {k}: {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn edf_plus_d_round_trip_keeps_the_gap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gap.edf");
    let signals = two_signals(4, false);
    // Records at 0, 1, then a 10 s gap: 12, 13.
    write_edf(
        &path,
        false,
        Some('D'),
        1.0,
        &signals,
        Some(&[0.0, 1.0, 12.0, 13.0]),
        &[],
    );
    let rec = open(&path);
    assert_eq!(rec.format, Format::EdfPlusD);
    assert_eq!(rec.duration_s(), 4.0);
    assert_eq!(rec.segments.len(), 2);
    assert_eq!(rec.segments[1].start_s, 12.0);
    assert_eq!(rec.time_span_s(), 14.0);
    assert_eq!(rec.sample_time(0, 250), 12.5);
    // export writes the gap into the time column
    let out = dir.path().join("gap.csv");
    let st = std::process::Command::new(env!("CARGO_BIN_EXE_ede"))
        .args([
            "export",
            path.to_str().unwrap(),
            "--channels",
            "Fp1",
            "--start",
            "1.5",
            "--duration",
            "11.2",
            "--out",
            out.to_str().unwrap(),
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let text = std::fs::read_to_string(&out).unwrap();
    let times: Vec<f64> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(times.first(), Some(&1.5));
    assert_eq!(times.len(), 50 + 70);
    assert!(
        times.contains(&1.99)
            && times.contains(&12.0)
            && !times.iter().any(|&t| t > 2.0 && t < 12.0)
    );
}

#[test]
fn wfdb_212_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let n = 1001; // odd: the last 212 pair is half full
    let a: Vec<i32> = (0..n).map(|i| (i * 7 % 4000) - 2000 + 1).collect();
    let b: Vec<i32> = (0..n)
        .map(|i| ((i as f64 * 0.05).sin() * 1500.0) as i32)
        .collect();
    let mut flat = Vec::new();
    for i in 0..n as usize {
        flat.push(a[i]);
        flat.push(b[i]);
    }
    let mut bytes = Vec::new();
    for p in flat.chunks(2) {
        let x = p[0] & 0xFFF;
        let y = p.get(1).copied().unwrap_or(0) & 0xFFF;
        bytes.push((x & 0xFF) as u8);
        bytes.push(((x >> 8) | ((y >> 8) << 4)) as u8);
        bytes.push((y & 0xFF) as u8);
    }
    std::fs::write(dir.path().join("rt.dat"), bytes).unwrap();
    std::fs::write(
        dir.path().join("rt.hea"),
        format!("rt 2 250 {n}\nrt.dat 212 200(10)/mV 12 0 0 0 0 lead I\nrt.dat 212 100 12 0 0 0 0 lead II\n"),
    )
    .unwrap();
    let rec = open(&dir.path().join("rt"));
    assert_eq!(rec.signals[0].label, "lead I");
    assert_eq!(rec.signals[0].samples, n as usize);
    let va = rec.read_all(0).unwrap();
    let vb = rec.read_all(1).unwrap();
    for i in 0..n as usize {
        assert_eq!(va[i], ((a[i] - 10) as f64 / 200.0) as f32);
        assert_eq!(vb[i], (b[i] as f64 / 100.0) as f32);
    }
}

#[test]
fn csv_with_and_without_time_column() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("x.csv");
    std::fs::write(&p, "Fp1 [uV],ECG (mV)\n1,2\n3,4\n5,x\n").unwrap();
    assert!(
        Recording::open(&p, &OpenOptions::default())
            .unwrap_err()
            .to_string()
            .contains("--fs")
    );
    let rec = Recording::open(
        &p,
        &OpenOptions {
            csv_fs: Some(10.0),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(rec.format, Format::Csv);
    assert_eq!(rec.signals[1].unit, "mV");
    assert_eq!(rec.duration_s(), 0.3);
    assert!(rec.read_all(1).unwrap()[2].is_nan());
    assert_eq!(rec.warnings.len(), 1);
    std::fs::write(&p, "time,Cz\n0,1\n0.5,2\n1,3\n").unwrap();
    let rec = Recording::open(&p, &OpenOptions::default()).unwrap();
    assert_eq!(rec.signals[0].fs, 2.0);
    assert_eq!(rec.read_all(0).unwrap(), vec![1.0, 2.0, 3.0]);
}

#[test]
fn demo_is_deterministic_eeg_with_ecg() {
    let a = ede::recording::demo::demo_recording();
    let b = ede::recording::demo::demo_recording();
    assert_eq!(a.signals.len(), 20);
    assert_eq!(a.signals[19].label, "ECG");
    assert!(
        a.signals
            .iter()
            .all(|s| s.fs == 256.0 && s.samples == 256 * 120)
    );
    assert_eq!(a.read_all(0).unwrap(), b.read_all(0).unwrap());
    assert!(a.annotations.iter().filter(|x| x.text == "Blink").count() >= 10);
    // Blinks dominate Fp1 over O1: the frontal channel's peak is far larger.
    let peak = |i: usize| {
        a.read_all(i)
            .unwrap()
            .iter()
            .fold(0f32, |m, v| m.max(v.abs()))
    };
    assert!(peak(0) > 2.0 * peak(17));
}

#[test]
fn bad_files_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.edf");
    std::fs::write(&empty, b"").unwrap();
    let e = Recording::open(&empty, &OpenOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("empty.edf") && e.contains("empty"), "{e}");
    let garbage = dir.path().join("garbage.edf");
    std::fs::write(&garbage, b"\x89PNG not a recording at all").unwrap();
    let e = Recording::open(&garbage, &OpenOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("garbage.edf") && e.contains("not an EDF"), "{e}");
    let missing = dir.path().join("missing.edf");
    assert!(Recording::open(&missing, &OpenOptions::default()).is_err());
    // A truncated data section opens with the complete records and a warning.
    let p = dir.path().join("trunc.edf");
    write_edf(&p, false, None, 1.0, &two_signals(5, false), None, &[]);
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 150]).unwrap();
    let rec = open(&p);
    assert_eq!(rec.records, 4);
    assert!(rec.warnings.iter().any(|w| w.contains("truncated")));
    // A truncated header is an error.
    std::fs::write(&p, &bytes[..600]).unwrap();
    let e = Recording::open(&p, &OpenOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("truncated"), "{e}");
}

/// Thousands of mutated and truncated files: each opens or fails with an error, never panics,
/// and whatever opens decodes every sample.
#[test]
fn mutated_files_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut seeds: Vec<(String, Vec<u8>)> = Vec::new();
    for (bdf, plus) in [(false, None), (false, Some('C')), (true, Some('D'))] {
        let p = dir.path().join("seed");
        write_edf(
            &p,
            bdf,
            plus,
            1.0,
            &two_signals(3, bdf),
            None,
            &[(0.5, "x")],
        );
        seeds.push(("m.edf".into(), std::fs::read(&p).unwrap()));
    }
    let mut rnd = common::xorshift(0x1234_5678_9abc_def0u64);
    let p = dir.path().join("m.edf");
    for iter in 0..3000 {
        let (_, seed) = &seeds[iter % seeds.len()];
        let mut b = seed.clone();
        match rnd() % 4 {
            0 => b.truncate((rnd() as usize) % (b.len() + 1)),
            1 => {
                for _ in 0..1 + rnd() % 8 {
                    let i = (rnd() as usize) % b.len().min(1200);
                    b[i] = rnd() as u8;
                }
            }
            2 => {
                // Numbers in header fields: the most damaging mutations.
                let i = 184 + (rnd() as usize) % 72;
                let junk = [
                    b"-1      ".as_slice(),
                    b"99999999",
                    b"0       ",
                    b"1e308   ",
                    b"nan     ",
                ];
                let j = junk[(rnd() as usize) % junk.len()];
                let end = (i + j.len()).min(b.len());
                b[i..end].copy_from_slice(&j[..end - i]);
            }
            _ => {
                let i = 256 + (rnd() as usize) % (b.len() - 256).min(768);
                b[i] = rnd() as u8;
                b.truncate(b.len() - (rnd() as usize) % 64);
            }
        }
        std::fs::write(&p, &b).unwrap();
        common::decodes_if_it_opens(&p, &OpenOptions::default());
    }
    // WFDB headers with mutated text
    let hea = dir.path().join("w.hea");
    std::fs::write(dir.path().join("w.dat"), vec![0u8; 300]).unwrap();
    let base =
        b"w 2 360 100\nw.dat 212 200 11 1024 995 0 0 MLII\nw.dat 212 200 11 1024 995 0 0 V5\n"
            .to_vec();
    for _ in 0..1000 {
        let mut b = base.clone();
        for _ in 0..1 + rnd() % 4 {
            let i = (rnd() as usize) % b.len();
            b[i] = b"0123456789 x/()+:.-\n#"[(rnd() as usize) % 21];
        }
        std::fs::write(&hea, &b).unwrap();
        common::decodes_if_it_opens(&hea, &OpenOptions::default());
    }
}

/// Found by `cargo fuzz`: a header declaring 144 billion signals used to reserve memory for
/// them before finding that none are listed.
#[test]
fn wfdb_header_with_absurd_signal_count_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.hea");
    std::fs::write(&p, "f 144444444444 360 10\n").unwrap();
    let e = Recording::open(&p, &OpenOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("declares 144444444444 signals"), "{e}");
}

/// `Recording::sum` (EDF and BDF add up their stored integers) equals the values `read` gives
/// added up, over whole signals and stretches across records, with samples outside the digital
/// range clamped as `read` clamps them.
#[test]
fn sums_equal_the_decoded_values_added_up() {
    let dir = tempfile::tempdir().unwrap();
    for bdf in [false, true] {
        let path = dir.path().join(if bdf { "sum.bdf" } else { "sum.edf" });
        let mut signals = two_signals(5, bdf);
        // The ramp runs from -10000 to 9999: a narrower range clamps part of it.
        signals[0].digital_min = -5000;
        signals[0].digital_max = 6000;
        write_edf(&path, bdf, None, 1.0, &signals, None, &[]);
        let rec = open(&path);
        for i in 0..signals.len() {
            let v = rec.read_all(i).unwrap();
            for (start, len) in [(0, v.len()), (37, 250), (100, 100), (499, 1), (3, 0)] {
                let want: f64 = v[start..start + len].iter().map(|&x| x as f64).sum();
                let scale: f64 = v[start..start + len].iter().map(|&x| x.abs() as f64).sum();
                let got = rec.sum(i, start, len).unwrap();
                assert!(
                    (got - want).abs() <= 1e-6 * scale + 1e-9,
                    "bdf {bdf}, signal {i}, {start}+{len}: {got} against {want}"
                );
            }
        }
        assert!(rec.sum(0, 400, 101).is_err(), "past the end");
    }
}
