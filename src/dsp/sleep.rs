//! Sleep stages and the statistics of a hypnogram, with the names and definitions of YASA 0.8's
//! `Hypnogram.sleep_statistics` (checked against it in `tests/sleep.rs`): durations in minutes,
//! efficiencies and stage shares in percent, latencies from the hypnogram's start.

use serde::{Deserialize, Serialize};

use crate::recording::Annotation;

/// A stage as scored (AASM), with R&K 3 and 4 both N3, movement time as artefact and an
/// unscored epoch as UNS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Stage {
    Wake,
    N1,
    N2,
    N3,
    Rem,
    /// Artefact (movement time).
    Art,
    /// Unscored.
    Uns,
}

impl Stage {
    pub fn is_sleep(self) -> bool {
        matches!(self, Stage::N1 | Stage::N2 | Stage::N3 | Stage::Rem)
    }

    /// The stage an event's text names: AASM (`W`, `N1`, `N2`, `N3`, `R`, `REM`, also as `Sleep
    /// stage N2`), R&K as Sleep-EDF writes it (`Sleep stage W/1/2/3/4/R/?`), `Movement time`;
    /// `None` for any other event.
    pub fn from_label(text: &str) -> Option<Stage> {
        let t = text.trim();
        let lower = t.to_ascii_lowercase();
        if lower == "movement time" || lower == "mt" {
            return Some(Stage::Art);
        }
        let code = lower
            .strip_prefix("sleep stage")
            .map(str::trim)
            .unwrap_or(&lower);
        Some(match code {
            "w" | "wake" => Stage::Wake,
            "1" | "n1" => Stage::N1,
            "2" | "n2" => Stage::N2,
            "3" | "4" | "n3" | "n4" => Stage::N3,
            "r" | "rem" => Stage::Rem,
            "?" | "uns" | "unscored" => Stage::Uns,
            "art" => Stage::Art,
            _ => return None,
        })
    }
}

/// Labels a lab scores with beyond AASM's and R&K's (`ede sleep --stage LABEL=STAGE`, the Night
/// menu's table), matched on the whole text, case aside, before the built-in ones.
pub type StageLabels = [(String, Stage)];

impl Stage {
    /// The stage `text` names: the lab's labels first, then `from_label`.
    pub fn of(text: &str, labels: &StageLabels) -> Option<Stage> {
        let t = text.trim();
        (labels.iter())
            .find(|(l, _)| l.trim().eq_ignore_ascii_case(t))
            .map(|&(_, s)| s)
            .or_else(|| Stage::from_label(t))
    }

    /// Every stage, in the order menus list them.
    pub const ALL: [Stage; 7] = [
        Stage::Wake,
        Stage::N1,
        Stage::N2,
        Stage::N3,
        Stage::Rem,
        Stage::Art,
        Stage::Uns,
    ];

    /// The rows of a hypnogram, top to bottom (EDFbrowser's order).
    pub const ROWS: [Stage; 5] = [Stage::Wake, Stage::Rem, Stage::N1, Stage::N2, Stage::N3];

    /// YASA's name (what its `Hypnogram` reads from a CSV).
    pub fn yasa(self) -> &'static str {
        match self {
            Stage::Wake => "WAKE",
            Stage::N1 => "N1",
            Stage::N2 => "N2",
            Stage::N3 => "N3",
            Stage::Rem => "REM",
            Stage::Art => "ART",
            Stage::Uns => "UNS",
        }
    }

    /// The event text scoring writes (AASM, read back by `from_label`).
    pub fn event_text(self) -> &'static str {
        match self {
            Stage::Wake => "Sleep stage W",
            Stage::N1 => "Sleep stage N1",
            Stage::N2 => "Sleep stage N2",
            Stage::N3 => "Sleep stage N3",
            Stage::Rem => "Sleep stage R",
            Stage::Art => "Movement time",
            Stage::Uns => "Sleep stage ?",
        }
    }

    pub fn short(self) -> &'static str {
        match self {
            Stage::Rem => "R",
            Stage::Wake => "W",
            other => other.yasa(),
        }
    }
}

/// The events with epoch `epoch` (of `epoch_s` seconds) scored `stage`: a stage event covering
/// it is cut around it (Sleep-EDF scores runs of epochs as one event), then one event of one
/// epoch is added.
pub fn score(
    events: &[Annotation],
    epoch: usize,
    epoch_s: f64,
    stage: Stage,
    labels: &StageLabels,
) -> Vec<Annotation> {
    let (t0, t1) = (epoch as f64 * epoch_s, (epoch + 1) as f64 * epoch_s);
    let mut out = Vec::with_capacity(events.len() + 2);
    for a in events {
        let end = a.onset + a.duration.max(epoch_s * 0.5);
        if Stage::of(&a.text, labels).is_none() || end <= t0 + 1e-9 || a.onset >= t1 - 1e-9 {
            out.push(a.clone());
            continue;
        }
        if a.onset < t0 - 1e-9 {
            out.push(Annotation {
                duration: t0 - a.onset,
                ..a.clone()
            });
        }
        if a.onset + a.duration > t1 + 1e-9 {
            out.push(Annotation {
                onset: t1,
                duration: a.onset + a.duration - t1,
                ..a.clone()
            });
        }
    }
    out.push(Annotation {
        onset: t0,
        duration: epoch_s,
        text: stage.event_text().into(),
    });
    out.sort_by(|a, b| a.onset.total_cmp(&b.onset));
    out
}

/// One stage per line under a `stage` header, in YASA's names: `yasa.Hypnogram(pandas.read_csv(
/// path)["stage"])` reads it.
pub fn yasa_csv(stages: &[Stage]) -> String {
    let mut s = String::from("stage\n");
    for st in stages {
        s += st.yasa();
        s.push('\n');
    }
    s
}

/// One stage per epoch of `epoch_s` seconds from scored events (`Stage::of`; others
/// are passed over): an event covers the epochs its span starts in, at least one (Sleep-EDF
/// scores runs of epochs as one event). Epochs no event covers are unscored; the hypnogram
/// ends with the last staged event.
pub fn hypnogram(events: &[Annotation], epoch_s: f64, labels: &StageLabels) -> Vec<Stage> {
    let staged: Vec<(&Annotation, Stage)> = (events.iter())
        .filter(|a| a.onset.is_finite() && a.onset >= 0.0 && a.duration.is_finite())
        .filter_map(|a| Some((a, Stage::of(&a.text, labels)?)))
        .collect();
    let span = |a: &Annotation| {
        let first = (a.onset / epoch_s + 1e-9).floor() as usize;
        let n = ((a.duration / epoch_s) - 1e-9).ceil().max(1.0) as usize;
        (first, first + n)
    };
    let epochs = (staged.iter()).map(|(a, _)| span(a).1).max().unwrap_or(0);
    let mut out = vec![Stage::Uns; epochs];
    for (a, stage) in staged {
        let (first, end) = span(a);
        out[first..end].fill(stage);
    }
    out
}

/// YASA's sleep statistics (its keys as JSON names). Latencies and ratios without a defined
/// value (no sleep, no REM) are NaN, written as JSON null.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SleepStatistics {
    /// Time in bed: the whole hypnogram.
    #[serde(rename = "TIB")]
    pub tib: f64,
    /// Sleep period time: first to last sleep epoch.
    #[serde(rename = "SPT")]
    pub spt: f64,
    /// Wake after sleep onset, within the SPT.
    #[serde(rename = "WASO")]
    pub waso: f64,
    /// Total sleep time: N1 + N2 + N3 + REM within the SPT.
    #[serde(rename = "TST")]
    pub tst: f64,
    /// Sleep efficiency, TST / TIB, %.
    #[serde(rename = "SE")]
    pub se: f64,
    /// Sleep maintenance efficiency, TST / SPT, %.
    #[serde(rename = "SME")]
    pub sme: f64,
    /// Sleep fragmentation index: transitions from sleep to wake per hour of TST.
    #[serde(rename = "SFI")]
    pub sfi: f64,
    /// Sleep onset latency: to the first sleep epoch.
    #[serde(rename = "SOL")]
    pub sol: f64,
    /// To the first run of at least 5 minutes of sleep.
    #[serde(rename = "SOL_5min")]
    pub sol_5min: f64,
    /// To the first REM epoch, from the start.
    #[serde(rename = "Lat_REM")]
    pub lat_rem: f64,
    #[serde(rename = "WAKE")]
    pub wake: f64,
    #[serde(rename = "N1")]
    pub n1: f64,
    #[serde(rename = "N2")]
    pub n2: f64,
    #[serde(rename = "N3")]
    pub n3: f64,
    #[serde(rename = "REM")]
    pub rem: f64,
    /// Artefact minutes, where the hypnogram has any (YASA reports it only then).
    #[serde(rename = "ART", skip_serializing_if = "Option::is_none")]
    pub art: Option<f64>,
    /// Unscored minutes, where the hypnogram has any.
    #[serde(rename = "UNS", skip_serializing_if = "Option::is_none")]
    pub uns: Option<f64>,
    #[serde(rename = "%N1")]
    pub pct_n1: f64,
    #[serde(rename = "%N2")]
    pub pct_n2: f64,
    #[serde(rename = "%N3")]
    pub pct_n3: f64,
    #[serde(rename = "%REM")]
    pub pct_rem: f64,
}

/// The statistics of `stages`, one per epoch of `epoch_s` seconds; `None` for no epochs.
pub fn statistics(stages: &[Stage], epoch_s: f64) -> Option<SleepStatistics> {
    let n = stages.len();
    if n == 0 || !(epoch_s.is_finite() && epoch_s > 0.0) {
        return None;
    }
    let per_min = 60.0 / epoch_s;
    let minutes = |epochs: usize| epochs as f64 / per_min;
    let count = |s: Stage| stages.iter().filter(|&&x| x == s).count();
    let first = stages.iter().position(|s| s.is_sleep());
    // YASA's "sleep" for the period is any stage but wake, artefact and unscored: the sleep
    // stages here.
    let last = stages.iter().rposition(|s| s.is_sleep());
    let (spt, waso, tst, sol) = match (first, last) {
        (Some(f), Some(l)) => {
            let period = &stages[f..=l];
            let tst = minutes(period.iter().filter(|s| s.is_sleep()).count());
            (
                minutes(l + 1 - f),
                minutes(period.iter().filter(|&&s| s == Stage::Wake).count()),
                tst,
                minutes(f),
            )
        }
        _ => (0.0, f64::NAN, 0.0, f64::NAN),
    };
    let tib = minutes(n);
    let (sme, sfi) = if spt == 0.0 {
        (f64::NAN, f64::NAN)
    } else {
        let to_wake = (stages.windows(2))
            .filter(|w| w[0].is_sleep() && w[1] == Stage::Wake)
            .count();
        (100.0 * tst / spt, to_wake as f64 / (tst / 60.0))
    };
    // The first run of sleep of at least 5 minutes, rounded up to whole epochs.
    let need = (5.0 * per_min - 1e-9).ceil() as usize;
    let mut sol_5min = f64::NAN;
    let mut run = 0;
    for (i, s) in stages.iter().enumerate() {
        run = if s.is_sleep() { run + 1 } else { 0 };
        if run == need.max(1) {
            sol_5min = minutes(i + 1 - run);
            break;
        }
    }
    let lat_rem = (stages.iter().position(|&s| s == Stage::Rem)).map_or(f64::NAN, minutes);
    let pct = |s: Stage| {
        if tst > 0.0 {
            100.0 * minutes(count(s)) / tst
        } else {
            f64::NAN
        }
    };
    let present = |s: Stage| (count(s) > 0).then(|| minutes(count(s)));
    Some(SleepStatistics {
        tib,
        spt,
        waso,
        tst,
        se: 100.0 * tst / tib,
        sme,
        sfi,
        sol: if tst > 0.0 { sol } else { f64::NAN },
        sol_5min,
        lat_rem,
        wake: minutes(count(Stage::Wake)),
        n1: minutes(count(Stage::N1)),
        n2: minutes(count(Stage::N2)),
        n3: minutes(count(Stage::N3)),
        rem: minutes(count(Stage::Rem)),
        art: present(Stage::Art),
        uns: present(Stage::Uns),
        pct_n1: pct(Stage::N1),
        pct_n2: pct(Stage::N2),
        pct_n3: pct(Stage::N3),
        pct_rem: pct(Stage::Rem),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoring_an_epoch_inside_a_run_cuts_the_run() {
        let ev = |onset: f64, duration: f64, text: &str| Annotation {
            onset,
            duration,
            text: text.into(),
        };
        let events = vec![
            ev(0.0, 150.0, "Sleep stage W"),
            ev(150.0, 30.0, "Sleep stage 1"),
            ev(40.0, 0.0, "Lights off"),
        ];
        let scored = score(&events, 2, 30.0, Stage::N2, &[]);
        let stages = hypnogram(&scored, 30.0, &[]);
        use Stage::*;
        assert_eq!(stages, [Wake, Wake, N2, Wake, Wake, N1]);
        assert!(scored.iter().any(|a| a.text == "Lights off"));
        // Rescoring the same epoch replaces it; scoring past the end extends the hypnogram.
        let again = score(&scored, 2, 30.0, Stage::Rem, &[]);
        assert_eq!(hypnogram(&again, 30.0, &[])[2], Rem);
        assert_eq!(again.len(), scored.len());
        let later = score(&again, 8, 30.0, Stage::N3, &[]);
        assert_eq!(hypnogram(&later, 30.0, &[])[6..], [Uns, Uns, N3]);
        assert_eq!(yasa_csv(&[Wake, Rem]), "stage\nWAKE\nREM\n");
        // A lab's own labels count before the built-in ones.
        let lab = [ev(0.0, 30.0, "Stadium 2"), ev(30.0, 30.0, "Wach")];
        let labels = [("stadium 2".to_string(), N2), ("WACH".to_string(), Wake)];
        assert_eq!(hypnogram(&lab, 30.0, &[]), []);
        assert_eq!(hypnogram(&lab, 30.0, &labels), [N2, Wake]);
        let rescored = score(&lab, 0, 30.0, Rem, &labels);
        assert_eq!(hypnogram(&rescored, 30.0, &labels), [Rem, Wake]);
    }

    #[test]
    fn sleep_edf_and_aasm_labels() {
        assert_eq!(Stage::from_label("Sleep stage W"), Some(Stage::Wake));
        assert_eq!(Stage::from_label("Sleep stage 4"), Some(Stage::N3));
        assert_eq!(Stage::from_label("Sleep stage ?"), Some(Stage::Uns));
        assert_eq!(Stage::from_label("Movement time"), Some(Stage::Art));
        assert_eq!(Stage::from_label("Sleep stage N2"), Some(Stage::N2));
        assert_eq!(Stage::from_label("R"), Some(Stage::Rem));
        assert_eq!(Stage::from_label("Lights off"), None);
    }

    #[test]
    fn no_epochs_or_no_sleep() {
        assert!(statistics(&[], 30.0).is_none());
        let s = statistics(&[Stage::Wake; 4], 30.0).unwrap();
        assert_eq!((s.tib, s.tst, s.spt), (2.0, 0.0, 0.0));
        assert!(s.sol.is_nan() && s.waso.is_nan() && s.pct_n2.is_nan());
    }
}
