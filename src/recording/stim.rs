//! Events from stimulus channels, as MNE-Python's `find_events` makes them: integer codes,
//! an event at each step up, analog signals under a trigger's name refused.

use super::{Annotation, ChannelType, ReadError, SampleSource, SignalInfo};

/// Stimulus channels are read at open for their events where the data hold up to this many
/// bytes: in multiplexed data a channel's samples lie strided through all of it, so reading
/// one touches the whole data (128 MB: about 25 ms from the page cache; 88 MB took 15 ms).
const MAX_STIM_SCAN_BYTES: usize = 128 << 20;

/// The steps of the stimulus channels among `signals` (read through `source`, whose data
/// span `data_bytes`; `time_of(signal, sample)` in seconds) as events, as MNE-Python's `find_events` finds them with its defaults
/// (`stim_steps`): the text is the code, tied to its channel (`code@@channel`); the duration
/// runs until the code changes again. `annotations` sorted by onset after. Longer recordings
/// are not read whole at open: a warning says so.
pub(crate) fn stim_events(
    source: &dyn SampleSource,
    signals: &[SignalInfo],
    time_of: &dyn Fn(usize, usize) -> f64,
    data_bytes: usize,
    annotations: &mut Vec<Annotation>,
    warnings: &mut Vec<String>,
) -> Result<(), ReadError> {
    for (i, s) in signals.iter().enumerate() {
        if s.kind != ChannelType::Stim {
            continue;
        }
        // Gaps (FIF skips) hold samples but no bytes: the scan's own buffer counts as well.
        if data_bytes > MAX_STIM_SCAN_BYTES || s.samples > MAX_STIM_SCAN_BYTES / 4 {
            warnings.push(format!(
                "{}: steps not turned into events (a recording this long opens without \
                 reading it whole)",
                s.label
            ));
            continue;
        }
        let mut v = vec![0f32; s.samples];
        source.read(i, 0, &mut v)?;
        let steps = stim_steps(&v);
        // Trigger codes hold for a while; a channel whose value steps up at more than one
        // sample in 20 carries an analog signal under a trigger's name (a BDF's "Trigger" in
        // uV wandering 924-938: MNE finds 14,643 "events" in its 4 minutes), not events.
        if steps.len() * ANALOG_STEPS > v.len() {
            warnings.push(format!(
                "{}: its value steps up at {} of {} samples, an analog signal rather than \
                 trigger codes: no events made of it",
                s.label.trim(),
                steps.len(),
                v.len()
            ));
            continue;
        }
        for step in steps {
            let onset = time_of(i, step.sample);
            annotations.push(Annotation {
                onset,
                duration: time_of(i, step.sample + step.samples - 1) - onset + 1.0 / s.fs,
                text: Annotation::on_channel(&step.code.to_string(), s.label.trim()),
            });
        }
    }
    annotations.sort_by(|a, b| a.onset.total_cmp(&b.onset));
    Ok(())
}

/// A stimulus channel stepping up at more than one sample in this many is analog, not codes.
const ANALOG_STEPS: usize = 20;

/// An event of a stimulus channel: the code it steps up to, at which sample, for how many.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StimStep {
    pub sample: usize,
    pub code: i64,
    pub samples: usize,
}

/// MNE-Python's `find_events(raw, consecutive='increasing')`: values are taken as integer
/// codes (truncated toward zero, their magnitude), and every step up to a higher code is an
/// event; a code the channel starts on is none. Analog noise below 1 (0.006-0.07 on some
/// Neuromag STI channels) is code 0 throughout and so gives no event.
pub fn stim_steps(values: &[f32]) -> Vec<StimStep> {
    let code = |x: f32| if x.is_finite() { (x as i64).abs() } else { 0 };
    let mut out: Vec<StimStep> = Vec::new();
    let mut prev = values.first().map_or(0, |&x| code(x));
    let mut changed_at = 0;
    for (k, &x) in values.iter().enumerate().skip(1) {
        let c = code(x);
        if c == prev {
            continue;
        }
        if let Some(last) = out.last_mut().filter(|l| l.sample == changed_at) {
            last.samples = k - last.sample;
        }
        if c > prev {
            out.push(StimStep {
                sample: k,
                code: c,
                samples: 0,
            });
        }
        changed_at = k;
        prev = c;
    }
    if let Some(last) = out.last_mut().filter(|l| l.sample == changed_at) {
        last.samples = values.len() - last.sample;
    }
    out
}
