//! `ede group`: a study's per-recording outputs gathered into tables and figures.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;

use crate::analysis::group::{self, figures};
use crate::recording::bids;

#[derive(Debug, clap::Args)]
pub struct GroupArgs {
    /// The derivatives folder the per-recording outputs are in (`derivatives/ede/`, or a
    /// workflow's output folder).
    pub dir: PathBuf,
    /// The `participants.tsv` whose columns are joined into every table (default: the one
    /// of the dataset the folder derives from, `DIR/../../participants.tsv`, where there is one).
    #[arg(long)]
    pub participants: Option<PathBuf>,
    /// The participants' column that names each one's group in the figures.
    #[arg(long, default_value = "group")]
    pub group_column: String,
    /// Where the tables go, and the figures into its `figures/` (default: DIR/group).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn run(args: &GroupArgs) -> anyhow::Result<()> {
    let t = Instant::now();
    let participants_path = args.participants.clone().or_else(|| {
        let p = args.dir.join("../../participants.tsv");
        p.is_file().then_some(p)
    });
    let participants = match &participants_path {
        Some(p) => Some(bids::read_tsv(p).with_context(|| format!("cannot read {}", p.display()))?),
        None => None,
    };
    let g = group::collect(&args.dir, participants.as_ref())?;
    let out = args.out.clone().unwrap_or_else(|| args.dir.join("group"));
    let mut written = g.write_tables(&out)?;
    let column = g.participant_columns.contains(&args.group_column);
    if !column && participants.is_some() {
        eprintln!(
            "ede group: participants.tsv has no column {:?}; the figures show one group",
            args.group_column
        );
    }
    let column = column.then_some(args.group_column.as_str());
    written.extend(figures::draw_all(&g, &out.join("figures"), column)?);
    for (path, why) in &g.unreadable {
        eprintln!("ede group: cannot read {}: {why}", path.display());
    }
    for f in &g.failures {
        eprintln!(
            "ede group: {} failed for {}: {}",
            f.analysis, f.key.stem, f.error
        );
    }
    eprintln!(
        "ede group: {} Cross-ApEn, {} band-power, {} Hermite and {} blink outputs, {} failed jobs \
         -> {} files in {} ({:.3} s)",
        g.xapen.len(),
        g.band_power.len(),
        g.hermite.len(),
        g.blinks.len(),
        g.failures.len(),
        written.len(),
        out.display(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
