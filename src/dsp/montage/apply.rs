//! Samples of resolved derivations: each recorded channel read once per request, each shared
//! `minus` combination (an average reference) summed once, and display filters run with the
//! margins that make a window equal the whole signal filtered. The browser and `ede export`
//! both read traces through here.

use std::collections::HashMap;

use rayon::prelude::*;

use super::Derivation;
use crate::dsp::filter::DisplayFilter;
use crate::recording::{ReadError, Recording};

/// Samples `start..start + len` of `derivations[d]` for each `d` of `group` (one rate); past a
/// signal's end the values are NaN.
pub fn derive(
    rec: &Recording,
    derivations: &[Derivation],
    group: &[usize],
    start: usize,
    len: usize,
) -> Result<Vec<Vec<f32>>, ReadError> {
    derive_on(rec, derivations, group, start, len, true)
}

/// `derive` with the channels read on this thread alone (`parallel` false): for callers that
/// already keep every core busy, whose samples are then decoded in the cache that uses them.
pub fn derive_on(
    rec: &Recording,
    derivations: &[Derivation],
    group: &[usize],
    start: usize,
    len: usize,
    parallel: bool,
) -> Result<Vec<Vec<f32>>, ReadError> {
    let mut sources: Vec<usize> = group
        .iter()
        .flat_map(|&d| derivations[d].sources())
        .collect();
    sources.sort_unstable();
    sources.dedup();
    let read_one = |&s: &usize| {
        let mut v = vec![f32::NAN; len];
        let avail = rec.signals[s].samples.saturating_sub(start).min(len);
        rec.read(s, start, &mut v[..avail]).map(|_| (s, v))
    };
    let read: Vec<(usize, Vec<f32>)> = match parallel {
        true => sources.par_iter().map(read_one).collect::<Result<_, _>>()?,
        false => sources.iter().map(read_one).collect::<Result<_, _>>()?,
    };
    let mut data: HashMap<usize, Vec<f32>> = read.into_iter().collect();
    // How many more times each channel is read: its last reader takes it instead of a copy
    // (a whole night's chunks are tens of MB; copies were a fifth of a trend's time).
    let mut uses: HashMap<usize, usize> = HashMap::new();
    for &d in group {
        for s in derivations[d].sources() {
            *uses.entry(s).or_default() += 1;
        }
    }
    let mut release = |data: &mut HashMap<usize, Vec<f32>>, s: usize| -> Option<Vec<f32>> {
        let left = uses.get_mut(&s).expect("counted above");
        *left -= 1;
        if *left == 0 { data.remove(&s) } else { None }
    };
    // Traces subtracting the same combination (every trace of an average reference) share it.
    let mut combos: HashMap<Vec<(usize, u32)>, Vec<f32>> = HashMap::new();
    let mut out = Vec::with_capacity(group.len());
    for &d in group {
        let der = &derivations[d];
        let key: Vec<(usize, u32)> = der.minus.iter().map(|&(c, w)| (c, w.to_bits())).collect();
        if !der.minus.is_empty() && !combos.contains_key(&key) {
            let mut m = vec![0f32; len];
            for &(c, w) in &der.minus {
                for (a, b) in m.iter_mut().zip(&data[&c]) {
                    *a += w * b;
                }
            }
            combos.insert(key.clone(), m);
        }
        let mut x = if der.interpolated {
            vec![0f32; len]
        } else {
            match release(&mut data, der.plus) {
                Some(own) => own,
                None => data[&der.plus].clone(),
            }
        };
        for &(c, _) in &der.minus {
            release(&mut data, c);
        }
        if let Some(m) = combos.get(&key) {
            for (a, b) in x.iter_mut().zip(m) {
                *a -= b;
            }
        }
        out.push(x);
    }
    Ok(out)
}

/// As `derive`, each trace filtered by `filter_of(d)` as if the whole stretch `bounds` (a
/// segment's sample range: filters never run across a gap) had been filtered.
pub fn derive_filtered(
    rec: &Recording,
    derivations: &[Derivation],
    group: &[usize],
    start: usize,
    len: usize,
    bounds: (usize, usize),
    filter_of: impl Fn(usize) -> DisplayFilter + Sync,
) -> Result<Vec<Vec<f32>>, ReadError> {
    let Some(&first) = group.first() else {
        return Ok(Vec::new());
    };
    let fs = rec.signals[derivations[first].plus].fs;
    let filters: Vec<DisplayFilter> = group.iter().map(|&d| filter_of(d)).collect();
    let margin = filters
        .iter()
        .filter(|f| f.is_active())
        .map(|f| f.margin(fs))
        .max()
        .unwrap_or(0);
    let pre = margin.min(start.saturating_sub(bounds.0));
    let post = if filters.iter().any(|f| f.is_active() && f.zero_phase) {
        margin.min(bounds.1.saturating_sub(start + len))
    } else {
        0
    };
    let mut data = derive(rec, derivations, group, start - pre, pre + len + post)?;
    data.par_iter_mut().zip(&filters).for_each(|(x, f)| {
        if f.is_active() {
            f.apply(fs, x);
        }
        x.truncate(pre + len);
        x.drain(..pre);
    });
    Ok(data)
}
