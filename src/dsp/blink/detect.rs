//! Peaks of a band-passed trace: the positive excursions above a threshold, one peak each,
//! with their extent.

/// One excursion: the sample of its maximum, where it starts and ends (the trace above
/// `extent` x the peak's height), and the height.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peak {
    pub peak: usize,
    pub start: usize,
    pub end: usize,
    pub height: f32,
}

/// 1.4826 x the median absolute deviation: the SD of Gaussian background, unmoved by blinks.
pub fn robust_sigma(x: &[f32]) -> f32 {
    if x.is_empty() {
        return 0.0;
    }
    let mut v: Vec<f32> = x.to_vec();
    let mid = v.len() / 2;
    let median = *v.select_nth_unstable_by(mid, f32::total_cmp).1;
    v.iter_mut().for_each(|a| *a = (*a - median).abs());
    1.4826 * *v.select_nth_unstable_by(mid, f32::total_cmp).1
}

/// Excursions of `b` above `threshold`; of two peaks closer than `min_gap` samples the
/// higher stays. `extent` (0..1) sets where an excursion starts and ends, as a fraction of its
/// peak height, searched at most `max_half` samples either side.
pub fn peaks(b: &[f32], threshold: f32, min_gap: usize, extent: f32, max_half: usize) -> Vec<Peak> {
    let mut found: Vec<Peak> = Vec::new();
    let mut k = 0;
    while k < b.len() {
        if b[k] <= threshold {
            k += 1;
            continue;
        }
        let run = k;
        while k < b.len() && b[k] > threshold {
            k += 1;
        }
        let peak = (run..k)
            .max_by(|&i, &j| b[i].total_cmp(&b[j]))
            .unwrap_or(run);
        let height = b[peak];
        let floor = extent * height;
        let lo = peak.saturating_sub(max_half);
        let hi = (peak + max_half).min(b.len() - 1);
        let start = (lo..=peak).rev().find(|&i| b[i] < floor).unwrap_or(lo);
        let end = (peak..=hi).find(|&i| b[i] < floor).unwrap_or(hi);
        let p = Peak {
            peak,
            start,
            end,
            height,
        };
        match found.last_mut() {
            Some(last) if peak - last.peak < min_gap => {
                if height > last.height {
                    *last = p;
                }
            }
            _ => found.push(p),
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_separate_bumps_and_merges_close_ones() {
        let mut b = vec![0.0f32; 200];
        for (c, h) in [(30usize, 5.0f32), (36, 7.0), (120, 4.0)] {
            for (i, v) in b.iter_mut().enumerate().take(c + 6).skip(c - 5) {
                *v = v.max(h * (1.0 - (i as f32 - c as f32).abs() / 6.0));
            }
        }
        let p = peaks(&b, 2.0, 20, 0.2, 50);
        assert_eq!(p.len(), 2);
        assert_eq!((p[0].peak, p[0].height), (36, 7.0));
        assert_eq!(p[1].peak, 120);
        assert!(p[1].start < 120 && p[1].end > 120 && p[1].end - p[1].start <= 12);
        assert!((robust_sigma(&[1.0, 2.0, 3.0, 4.0, 100.0]) - 1.4826).abs() < 1e-5);
    }
}
