//! ICLabel (Pion-Tonachini et al. 2019) in ede: each component's probabilities of being brain,
//! muscle, eye, heart, line noise, channel noise or other, computed as mne-icalabel 0.10 does
//! (features, network), so that the numbers equal its `label_components(raw, ica, 'iclabel')`.

mod features;
mod net;

pub use features::features;
pub use net::Net;

use super::{Decomposition, IcaData};
use crate::recording::ChannelType;
use crate::recording::electrodes::template_1005_position;

/// The network's three inputs for every component.
pub struct Features {
    /// 32 x 32 scalp images, row-major as mne-icalabel's `topo[:, :, 0, k]`.
    pub topo: Vec<[f32; 1024]>,
    pub psd: Vec<[f32; 100]>,
    pub autocorr: Vec<[f32; 100]>,
}

/// ICLabel's probabilities for every component of `d`, fitted on `data`; or why they cannot
/// be computed (MEG channels, a channel without a position, a rate below 100 Hz).
pub fn label(data: &IcaData, d: &Decomposition) -> Result<Vec<[f64; 7]>, String> {
    if let Some(i) = (data.kinds.iter()).position(|k| *k != ChannelType::Eeg) {
        return Err(format!(
            "ICLabel classifies EEG components; {} is {}",
            data.labels[i],
            data.kinds[i].name()
        ));
    }
    let positions = (data.positions.iter().zip(&data.labels))
        .map(|(p, l)| {
            p.or_else(|| template_1005_position(l))
                .ok_or_else(|| format!("ICLabel needs every channel's position; {l} has none"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let r = d.components();
    let weights = &d.mne_unmixing * d.pca_components.rows(0, r);
    let f = features(&weights, &data.data, &positions, data.fs)?;
    Ok(Net::get().classify(&f))
}
