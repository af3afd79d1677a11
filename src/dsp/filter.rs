//! Display filters: second-order Butterworth high-pass and low-pass and a 50/60 Hz notch, run as
//! a cascade of biquads (the `biquad` crate), in one direction as EEG viewers do.

use biquad::{Biquad, Coefficients, DirectForm2Transposed, Q_BUTTERWORTH_F32, ToHertz, Type};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct DisplayFilter {
    /// High-pass corner in Hz.
    pub highpass: Option<f32>,
    /// Low-pass corner in Hz.
    pub lowpass: Option<f32>,
    /// Mains frequency to notch out (50 or 60 Hz).
    pub notch: Option<f32>,
}

impl DisplayFilter {
    pub fn is_active(&self) -> bool {
        self.highpass.is_some() || self.lowpass.is_some() || self.notch.is_some()
    }

    /// Seconds of input to run through the filter before a window so its start has settled.
    pub fn warm_up_s(&self) -> f64 {
        match self.highpass {
            Some(f) if f > 0.0 => (3.0 / f as f64).clamp(0.5, 30.0),
            _ if self.is_active() => 0.5,
            _ => 0.0,
        }
    }

    /// The filter state machine for one channel at rate `fs`; corners at or above Nyquist are
    /// left out (they would be unstable).
    pub fn build(&self, fs: f64) -> FilterChain {
        let fs32 = fs as f32;
        let nyquist = fs32 / 2.0;
        let mut stages = Vec::new();
        let mut add = |t: Type<f32>, f: f32, q: f32| {
            if f > 0.0
                && f < nyquist * 0.98
                && let Ok(c) = Coefficients::<f32>::from_params(t, fs32.hz(), f.hz(), q)
            {
                stages.push(DirectForm2Transposed::<f32>::new(c));
            }
        };
        if let Some(f) = self.highpass {
            add(Type::HighPass, f, Q_BUTTERWORTH_F32);
        }
        if let Some(f) = self.lowpass {
            add(Type::LowPass, f, Q_BUTTERWORTH_F32);
        }
        if let Some(f) = self.notch {
            add(Type::Notch, f, 10.0);
        }
        FilterChain { stages }
    }
}

pub struct FilterChain {
    stages: Vec<DirectForm2Transposed<f32>>,
}

impl FilterChain {
    /// Filters in place, carrying state across calls (NaN gaps pass through as NaN without
    /// poisoning the state).
    pub fn run(&mut self, x: &mut [f32]) {
        if self.stages.is_empty() {
            return;
        }
        for v in x.iter_mut() {
            if !v.is_finite() {
                continue;
            }
            let mut y = *v;
            for s in &mut self.stages {
                y = s.run(y);
            }
            *v = y;
        }
    }

    pub fn reset(&mut self) {
        for s in &mut self.stages {
            s.reset_state();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gain_at(f: &DisplayFilter, hz: f32) -> f32 {
        let fs = 256.0;
        let mut x: Vec<f32> = (0..4096)
            .map(|i| (2.0 * std::f32::consts::PI * hz * i as f32 / fs).sin())
            .collect();
        f.build(fs as f64).run(&mut x);
        let tail = &x[2048..];
        (tail.iter().map(|v| v * v).sum::<f32>() / tail.len() as f32 * 2.0).sqrt()
    }

    #[test]
    fn responses_match_the_corners() {
        let hp = DisplayFilter {
            highpass: Some(1.0),
            ..Default::default()
        };
        assert!(gain_at(&hp, 0.1) < 0.05);
        assert!((gain_at(&hp, 10.0) - 1.0).abs() < 0.02);
        let lp = DisplayFilter {
            lowpass: Some(30.0),
            ..Default::default()
        };
        assert!((gain_at(&lp, 30.0) - std::f32::consts::FRAC_1_SQRT_2).abs() < 0.03);
        assert!(gain_at(&lp, 100.0) < 0.12);
        let notch = DisplayFilter {
            notch: Some(50.0),
            ..Default::default()
        };
        assert!(gain_at(&notch, 50.0) < 0.05);
        assert!((gain_at(&notch, 10.0) - 1.0).abs() < 0.02);
    }
}
