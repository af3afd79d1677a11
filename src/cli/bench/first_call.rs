//! `ede bench first-call`: the first Cross-ApEn subject (148 ch x 49 epochs x 1024, m = 1) of a
//! new process, as a user meets it. Each case runs in a process of its own (this binary again),
//! with the driver's own disk cache off (`__GL_SHADER_DISK_CACHE=0`, NVIDIA's) and ede's
//! pipeline cache in a folder of its own:
//!
//! - `cold`: ede's cache empty: every pipeline compiled (the first run ever);
//! - `cached`: the same folder again, as `cold` left it: pipelines from ede's cache;
//! - `tab`: as the app does when a recording opens, every analysis's kernels prepared in the
//!   background; the Cross-ApEn tab asks for them `--tab-after` seconds later (ede's cache
//!   empty, so only the preparation can have saved the compile).

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::cli::write_json;
use crate::dsp::xapen::{Correction, Epochs, XapenParams};
use crate::gpu::GpuContext;
use crate::gpu::xapen::{Readback, XapenKernels};

#[derive(Debug, clap::Args)]
pub struct FirstCallArgs {
    /// Seconds between the file opening and the tab asking for its kernels (`tab`).
    #[arg(long, default_value_t = 2.0)]
    pub tab_after: f64,
    /// Leave the driver's own disk cache as it is (by default it is turned off, so that only
    /// ede's cache can save a compile).
    #[arg(long)]
    pub driver_cache: bool,
    /// Internal: run one case in this process and print its figures as JSON.
    #[arg(long, hide = true)]
    pub case: Option<String>,
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
}

/// One case's figures.
#[derive(Debug, Serialize, Deserialize)]
pub struct Case {
    /// From asking for the kernels to the subject's matrix read back.
    pub first_subject_s: f64,
    /// Of which getting the kernels (compiled, from the cache, or prepared).
    pub kernels_s: f64,
    /// Pipelines created from asking for the kernels to the matrix, compiled or from a cache
    /// (prepared ones excluded: the tab's 0 means nothing was left to make).
    pub pipelines_created: usize,
    /// Whether the device had ede's disk cache.
    pub disk_cache: bool,
}

#[derive(Debug, Serialize)]
struct Report {
    adapter: String,
    driver_cache: bool,
    tab_after_s: f64,
    cold: Case,
    cached: Case,
    tab: Case,
}

pub fn run(args: &FirstCallArgs) -> anyhow::Result<()> {
    if let Some(case) = &args.case {
        let figures = one_case(case, args.tab_after)?;
        println!("{}", serde_json::to_string(&figures)?);
        return Ok(());
    }
    let ctx = GpuContext::headless()?;
    let adapter = ctx.describe();
    drop(ctx);
    let dir = std::env::temp_dir().join(format!("ede-first-call-{}", std::process::id()));
    let fresh = |d: &std::path::Path| -> anyhow::Result<()> {
        let _ = std::fs::remove_dir_all(d);
        std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))
    };
    fresh(&dir)?;
    let cold = child(args, "cold", &dir)?;
    let cached = child(args, "cached", &dir)?;
    fresh(&dir)?;
    let tab = child(args, "tab", &dir)?;
    let _ = std::fs::remove_dir_all(&dir);
    for (name, c) in [("cold", &cold), ("cached", &cached), ("tab", &tab)] {
        eprintln!(
            "{name}: first subject {:.3} s (kernels {:.3} s, {} pipelines created)",
            c.first_subject_s, c.kernels_s, c.pipelines_created
        );
    }
    let report = Report {
        adapter,
        driver_cache: args.driver_cache,
        tab_after_s: args.tab_after,
        cold,
        cached,
        tab,
    };
    write_json(&report, args.out.as_deref())
}

/// `case` in a new process of this binary, with ede's cache in `dir`.
fn child(args: &FirstCallArgs, case: &str, dir: &std::path::Path) -> anyhow::Result<Case> {
    let exe = std::env::current_exe().context("cannot find ede's own binary")?;
    let mut cmd = Command::new(exe);
    cmd.args(["bench", "first-call", "--case", case])
        .args(["--tab-after", &args.tab_after.to_string()])
        .env("EDE_CACHE_DIR", dir)
        .env_remove("EDE_PIPELINE_CACHE");
    if !args.driver_cache {
        cmd.env("__GL_SHADER_DISK_CACHE", "0");
    }
    let out = cmd.output().context("cannot run ede bench first-call")?;
    anyhow::ensure!(
        out.status.success(),
        "the {case} case failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(line.trim()).with_context(|| format!("the {case} case printed {line:?}"))
}

fn one_case(case: &str, tab_after: f64) -> anyhow::Result<Case> {
    let (b, e, n) = (148, 49, 1024);
    let params = XapenParams {
        m: 1,
        r: 0.2,
        correction: Correction::Max,
    };
    let ep = Epochs::normalize(&super::xapen::subject(b, e, n), n, b)?;
    let ctx = GpuContext::headless()?;
    match case {
        "cold" | "cached" => {}
        "tab" => {
            crate::analysis::prepare_gpu(&ctx);
            std::thread::sleep(Duration::from_secs_f64(tab_after.max(0.0)));
        }
        other => anyhow::bail!("unknown case {other:?}"),
    }
    let t = Instant::now();
    let compiled = ctx.pipelines_created();
    let mut kernels = XapenKernels::new(&ctx);
    let kernels_s = t.elapsed().as_secs_f64();
    let readback = Readback {
        per_epoch: false,
        totals: false,
    };
    kernels.matrices(&ep, &params, readback, None, None)?;
    Ok(Case {
        first_subject_s: t.elapsed().as_secs_f64(),
        kernels_s,
        // Preparation that was still compiling when the tab asked counts against it.
        pipelines_created: ctx.pipelines_created() - compiled,
        disk_cache: ctx.pipeline_cache_file().is_some(),
    })
}
