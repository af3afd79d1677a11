use super::*;

/// A channel as libeep's `huffman` packs it: method, sizes (4 bits for 16-bit values, 6
/// for 32-bit), first value, then residuals in `nbit` bits, escaping to `nexc` bits.
fn pack(method: i64, width: u32, (nbit, nexc): (u32, u32), first: i64, res: &[i64]) -> Vec<u8> {
    let (mut bytes, mut at) = (Vec::new(), 0);
    let mut push = |v: i64, n: u32| {
        for k in (0..n).rev() {
            if at % 8 == 0 {
                bytes.push(0u8);
            }
            *bytes.last_mut().unwrap() |= (((v >> k) & 1) as u8) << (7 - at % 8);
            at += 1;
        }
    };
    let field = if width == 16 { 4 } else { 6 };
    push(method, 4);
    push(nbit as i64, field);
    push(nexc as i64, field);
    push(first, width);
    let lo = -(1i64 << (nbit - 1));
    for &r in res {
        if nbit != nexc && (r <= lo || r >= -lo) {
            push(lo, nbit);
            push(r, nexc);
        } else {
            push(r, nbit);
        }
    }
    bytes
}

fn chunk(id: &[u8], body: &[u8]) -> Vec<u8> {
    let mut c = id.to_vec();
    c.extend((body.len() as u32).to_le_bytes());
    c.extend(body);
    if body.len() % 2 == 1 {
        c.push(0);
    }
    c
}

fn list(kind: &[u8], children: &[Vec<u8>]) -> Vec<u8> {
    let mut body = kind.to_vec();
    children.iter().for_each(|c| body.extend(c));
    chunk(b"LIST", &body)
}

/// Two channels, ten samples in epochs of eight: channel "B" is compressed first.
fn file() -> (Vec<u8>, [Vec<i64>; 2]) {
    let a: Vec<i64> = vec![5, 7, 6, 300, 301, -40, -41, -39, 1000, 1003];
    let b: Vec<i64> = vec![-2, 0, 3, 5, 4, 4, 2, 1, 70000, -70000];
    // Epoch 1: B as 16-bit values, A in 32-bit CHAN (its steps less B's), 3/20 bits.
    let mut data = vec![0u8];
    data.extend(b[..8].iter().flat_map(|&x| (x as i16).to_be_bytes()));
    let res: Vec<i64> = (1..8)
        .map(|s| a[s] - a[s - 1] - (b[s] - b[s - 1]))
        .collect();
    data.extend(pack(11, 32, (3, 20), a[0], &res));
    // Epoch 2: B as 32-bit values, A in 16-bit TIME (its steps), 4/12 bits.
    let second = data.len() as u32;
    data.push(0x80);
    data.extend(b[8..].iter().flat_map(|&x| (x as i32).to_be_bytes()));
    data.extend(pack(1, 16, (4, 12), a[8], &[a[9] - a[8]]));
    let ep: Vec<u8> = [8u32, 0, second]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let eeph = "[File Version]\n4.2\n[Sampling Rate]\n500.0\n[Samples]\n10\n[Channels]\n2\n\
                [Basic Channel Data]\n;label calibration factor\n\
                A 1.0 0.5 uV REF:Cz\nBIP1 2.0 0.25 uV\n";
    let info = "[StartDate]\n45518.5\n[StartFraction]\n0.25\n";
    let raw3 = list(
        b"raw3",
        &[
            chunk(b"chan", &[1, 0, 0, 0]),
            chunk(b"data", &data),
            chunk(b"ep  ", &ep),
        ],
    );
    let mut body = b"CNT ".to_vec();
    for c in [
        chunk(b"eeph", eeph.as_bytes()),
        raw3,
        chunk(b"info", info.as_bytes()),
    ] {
        body.extend(c);
    }
    (chunk(b"RIFF", &body), [a, b])
}

fn write(bytes: &[u8]) -> tempfile::TempPath {
    let f = tempfile::Builder::new().suffix(".cnt").tempfile().unwrap();
    std::fs::write(f.path(), bytes).unwrap();
    f.into_temp_path()
}

#[test]
fn a_minimal_file_round_trips() {
    let (bytes, [a, b]) = file();
    assert!(sniff(&bytes[..16]));
    let path = write(&bytes);
    let rec = open(&path).unwrap();
    let labels: Vec<&str> = rec.signals.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["A", "BIP1"]);
    assert_eq!(rec.signals[1].kind, ChannelType::Misc);
    assert_eq!((rec.signals[0].fs, rec.signals[0].samples), (500.0, 10));
    assert_eq!(rec.start.to_string(), "2024-08-14 12:00:00.250");
    for (k, (values, scale)) in [(&a, 0.5), (&b, 0.5)].into_iter().enumerate() {
        let got = rec.read_all(k).unwrap();
        let want: Vec<f32> = values.iter().map(|&v| v as f32 * scale).collect();
        assert_eq!(got, want, "channel {k}");
    }
    let mut three = [0f32; 3];
    rec.read(0, 7, &mut three).unwrap();
    assert_eq!(three, [-19.5, 500.0, 501.5]);
}

#[test]
fn truncated_or_damaged_files_are_errors() {
    let (bytes, _) = file();
    let cut = bytes.iter().rposition(|_| true).unwrap() - 60;
    for b in [
        &bytes[..cut],
        &bytes[..40],
        b"RIFF\0\0\0\0CNT garbage".as_slice(),
    ] {
        let path = write(b);
        let read = open(&path).and_then(|r| r.read_all(0));
        assert!(read.is_err(), "{} bytes", b.len());
    }
    let mut flipped = bytes.clone();
    let at = flipped.windows(4).position(|w| w == b"data").unwrap() + 8;
    flipped[at] = 0x70; // an unknown compression method
    let err = open(&write(&flipped)).unwrap().read_all(0).unwrap_err();
    assert!(err.to_string().contains("unknown way"), "{err}");
    for n in 0..64 {
        let garbage: Vec<u8> = (0..n * 7).map(|k| (k * 37 % 251) as u8).collect();
        assert!(read_evt(&garbage).len() <= n * 7);
    }
}

#[test]
fn disconnections_pair_into_bad_spans() {
    let t = |sample, cond: &str| Trigger {
        code: "0".into(),
        sample,
        condition: Some(cond.into()),
        ..Trigger::default()
    };
    let got = mne_annotations(vec![
        t(5, "Amplifier disconnected"),
        t(9, "amplifier reconnected"),
        t(7, "x"),
    ]);
    assert_eq!(
        got,
        [(7, 0, "0/x".into()), (5, 4, "BAD_disconnection".into())]
    );
}
