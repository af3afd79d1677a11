use super::*;

/// The steady-state gain of `f` for a sine of `hz` at 256 Hz.
fn gain_at(f: &DisplayFilter, hz: f32) -> f32 {
    let fs = 256.0;
    let mut x: Vec<f32> = (0..8192)
        .map(|i| (2.0 * std::f32::consts::PI * hz * i as f32 / fs).sin())
        .collect();
    f.build(fs as f64).run(&mut x);
    let tail = &x[4096..];
    (tail.iter().map(|v| v * v).sum::<f32>() / tail.len() as f32 * 2.0).sqrt()
}

fn parse(text: &str) -> DisplayFilter {
    DisplayFilter::parse(text).unwrap()
}

#[test]
fn responses_match_the_corners_at_every_order() {
    for order in 1..=MAX_ORDER {
        let hp = parse(&format!("hp=1,order={order}"));
        assert!((gain_at(&hp, 1.0) - std::f32::consts::FRAC_1_SQRT_2).abs() < 0.02);
        assert!((gain_at(&hp, 20.0) - 1.0).abs() < 0.02);
        let lp = parse(&format!("lp=30,order={order}"));
        assert!((gain_at(&lp, 30.0) - std::f32::consts::FRAC_1_SQRT_2).abs() < 0.02);
        // |H| = 1 / sqrt(1 + (w / wc)^2N) on the bilinear transform's warped frequencies.
        let warp = |hz: f32| (std::f32::consts::PI * hz / 256.0).tan();
        let expected = 1.0 / (1.0 + (warp(60.0) / warp(30.0)).powi(2 * order as i32)).sqrt();
        assert!(
            (gain_at(&lp, 60.0) - expected).abs() < 0.02,
            "order {order}"
        );
    }
    let notch = parse("notch=50");
    for h in [50.0, 100.0] {
        assert!(gain_at(&notch, h) < 0.02, "{h}");
    }
    assert!(gain_at(&notch, 40.0) > 0.97 && gain_at(&notch, 60.0) > 0.97);
    let fundamental = parse("notch=50,notch-harmonics=no");
    assert!(gain_at(&fundamental, 100.0) > 0.99);
    let bs = parse("bs=8-12,order=4");
    assert!(gain_at(&bs, 10.0) < 0.01 && gain_at(&bs, 20.0) > 0.98);
}

#[test]
fn parse_and_describe_round_trip_and_bad_settings_are_said() {
    let f = parse("hp=0.5, lp=35, hp-order=1, lp-order=4, bs=45-55, notch=60, zero-phase");
    assert_eq!(f.highpass, Some(0.5));
    assert_eq!((f.highpass_order, f.lowpass_order), (1, 4));
    assert_eq!(f.bandstop, Some([45.0, 55.0]));
    assert!(f.zero_phase && f.notch == Some(60.0));
    assert_eq!(
        f.describe(),
        "HP 0.5 Hz (order 1), LP 35 Hz (order 4), BS 45-55 Hz (order 2), notch 60 Hz + harmonics, zero phase"
    );
    assert!(matches!(
        DisplayFilter::parse("hp=x"),
        Err(FilterError::NotANumber(..))
    ));
    assert!(matches!(
        DisplayFilter::parse("wobble"),
        Err(FilterError::Unknown(_))
    ));
    assert!(matches!(
        parse("lp=200").sections(256.0),
        Err(FilterError::OutOfRange { .. })
    ));
    // What no rate can make is refused as it is typed.
    for (text, why) in [
        ("lp=0", "above 0 Hz"),
        ("hp=-1", "above 0 Hz"),
        ("hp=30,lp=10", "at or above the low-pass"),
        ("hp=10,lp=10", "at or above the low-pass"),
        ("hp=1,order=9", "not between 1 and 8"),
        ("lp=30,order=0", "not between 1 and 8"),
        ("bs=55-45", "lower edge"),
        ("notch=50,q=0", "Q 0"),
        ("lp=nan", "above 0 Hz"),
    ] {
        let e = DisplayFilter::parse(text).expect_err(text).to_string();
        assert!(e.contains(why), "{text}: {e}");
    }
    assert!(parse("lp=200").validate_at(1000.0).is_ok());
    assert!(parse("lp=200").validate_at(256.0).is_err());
    // One filter for channels of every rate: a corner above a channel's Nyquist is left out.
    assert!(parse("lp=200").build(256.0).is_empty());
    assert!(!parse("lp=200").build(1000.0).is_empty());
}

/// A window filtered with its margins equals filtering the whole signal, causal or not.
#[test]
fn a_window_with_its_margins_equals_the_whole_signal_filtered() {
    let fs = 256.0;
    let n = 120 * 256;
    let x: Vec<f32> = (0..n)
        .map(|i| {
            let t = i as f32 / fs as f32;
            800.0
                + 20.0 * (2.0 * std::f32::consts::PI * 7.0 * t).sin()
                + 5.0 * (2.0 * std::f32::consts::PI * 0.3 * t).sin()
                + ((i * 7919) % 101) as f32 / 10.0
        })
        .collect();
    for text in [
        "hp=1,lp=30,order=4",
        "hp=0.5,lp=40,order=2,zero-phase",
        "notch=50,hp=0.3,order=8",
    ] {
        let f = parse(text);
        let mut whole = x.clone();
        f.apply(fs, &mut whole);
        let m = f.margin(fs);
        assert!(m < n / 3, "{text}: margin {m}");
        let (a, b) = (n / 2, n / 2 + 2560);
        let post = if f.zero_phase { m } else { 0 };
        let mut w = x[a - m..b + post].to_vec();
        f.apply(fs, &mut w);
        let rms = (whole[a..b].iter().map(|v| v * v).sum::<f32>() / 2560.0).sqrt();
        for (k, (u, v)) in w[m..m + 2560].iter().zip(&whole[a..b]).enumerate() {
            assert!((u - v).abs() < 1e-3 * rms, "{text} at {k}: {u} vs {v}");
        }
    }
}

#[test]
fn settling_on_an_offset_leaves_no_step() {
    let f = parse("hp=1,lp=30,order=4");
    let mut x = vec![1000.0f32; 2560];
    f.apply(256.0, &mut x);
    assert!(x.iter().all(|v| v.abs() < 1e-6), "{:?}", &x[..4]);
    let mut y = vec![f32::NAN, 5.0, 5.0, f32::NAN, 5.0];
    parse("lp=30").apply(256.0, &mut y);
    assert!(y[0].is_nan() && y[3].is_nan());
    assert!(
        y[1..3]
            .iter()
            .chain(&y[4..])
            .all(|v| (v - 5.0).abs() < 1e-5)
    );
}
