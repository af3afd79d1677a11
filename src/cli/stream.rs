//! `ede stream FILE [--speed 1] [--loop] [--name NAME]`: any recording ede reads, published as
//! a Lab Streaming Layer outlet with its channels' labels, units and types, for demos and tests.

use std::path::PathBuf;

use crate::analysis::live::lsl::{PublishOptions, publish};

#[derive(Debug, clap::Args)]
pub struct StreamArgs {
    pub file: PathBuf,
    /// Times real time.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Start over at the end (time stamps go on).
    #[arg(long = "loop")]
    pub looped: bool,
    /// The stream's name (default: the file's stem).
    #[arg(long)]
    pub name: Option<String>,
    /// The stream's content type.
    #[arg(long = "type", default_value = "EEG")]
    pub stream_type: String,
    /// Wait up to this many seconds for a receiver before the first sample.
    #[arg(long, value_name = "SECONDS")]
    pub wait_for_consumer: Option<f64>,
    /// Simulate a disconnection: at AT seconds of stream the outlet goes away for LEN seconds
    /// of stream (their samples are lost) and comes back.
    #[arg(long, value_name = "AT:LEN", value_parser = parse_glitch)]
    pub glitch: Option<(f64, f64)>,
}

fn parse_glitch(s: &str) -> Result<(f64, f64), String> {
    let (a, l) = s.split_once(':').ok_or("expected AT:LEN in seconds")?;
    let num = |v: &str| {
        v.trim()
            .parse::<f64>()
            .ok()
            .filter(|x| *x >= 0.0 && x.is_finite())
    };
    match (num(a), num(l)) {
        (Some(a), Some(l)) if l > 0.0 => Ok((a, l)),
        _ => Err(format!(
            "expected AT:LEN in seconds, LEN above 0, got {s:?}"
        )),
    }
}

pub fn run(args: &StreamArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.speed > 0.0 && args.speed.is_finite(),
        "--speed must be positive, got {}",
        args.speed
    );
    let rec = super::open(&args.file, None)?;
    let name = args.name.clone().unwrap_or_else(|| {
        (args.file.file_stem()).map_or("ede".into(), |s| s.to_string_lossy().into_owned())
    });
    let opts = PublishOptions {
        name: name.clone(),
        stream_type: args.stream_type.clone(),
        speed: args.speed,
        looped: args.looped,
        chunk_s: 1.0 / 32.0,
        wait_for_consumer: args.wait_for_consumer,
        glitch: args.glitch,
    };
    eprintln!(
        "publishing {} as LSL stream {name:?} ({})",
        args.file.display(),
        opts.stream_type
    );
    let p = publish(&rec, &opts, &mut |_| true).map_err(anyhow::Error::msg)?;
    eprintln!(
        "{name}: {} samples of {} channels at {} Hz sent{}",
        p.samples,
        p.channels.len(),
        p.fs,
        if p.skipped_signals.is_empty() {
            String::new()
        } else {
            format!(
                "; left out (another sampling rate): {}",
                p.skipped_signals.join(", ")
            )
        }
    );
    Ok(())
}
