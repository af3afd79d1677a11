//! Helpers for analysis views' own parameters as a session keeps them
//! (`AnalysisView::parameters` / `set_parameters`).

use serde::Serialize;

use crate::gpu::GpuContext;

/// A view's saved parameters read back; `None` where they do not parse.
pub(crate) fn saved<T: serde::de::DeserializeOwned>(parameters: &serde_json::Value) -> Option<T> {
    serde_json::from_value(parameters.clone()).ok()
}

/// A view's saved parameters as JSON.
pub(crate) fn to_saved<T: Serialize>(saved: &T) -> serde_json::Value {
    serde_json::to_value(saved).unwrap_or_default()
}

/// The backend a session asks for, where it can run here.
pub(crate) fn saved_backend(
    asked: crate::analysis::Backend,
    gpu: Option<&GpuContext>,
) -> crate::analysis::Backend {
    match gpu {
        Some(_) => asked,
        None => crate::analysis::Backend::Cpu,
    }
}
