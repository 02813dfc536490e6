//! The fidelity panel: how close the reproduction came to the incident. For
//! each figure the incident report gives, the same metric measured here, side
//! by side, with the difference.

use super::measure::metric_value_explained;
use crate::analysis::VariantAnalysis;
use crate::metrics::Undefined;
use crate::model::RunData;
use serde::Serialize;

/// One incident figure beside its measured counterpart.
#[derive(Debug, Clone, Serialize)]
pub struct FidelityRow {
    pub variant: String,
    /// Metric as written in the figure (may carry `{zone}` and `[from..to]`).
    pub metric: String,
    pub label: String,
    pub incident_value: f64,
    pub measured: Option<f64>,
    /// `measured - incident_value`.
    pub difference: Option<f64>,
    /// `measured / incident_value` (absent when the incident value is 0).
    pub ratio: Option<f64>,
    /// Why it was not measured, when it was not.
    pub note: Option<String>,
}

/// One row per incident figure, in the order given.
pub fn fidelity_rows(run: &RunData, variants: &[VariantAnalysis]) -> Vec<FidelityRow> {
    run.incident_figures
        .iter()
        .map(|fig| {
            let measured = match (
                run.variants.iter().find(|v| v.name == fig.variant),
                variants.iter().find(|v| v.name == fig.variant),
            ) {
                (Some(v), Some(a)) => metric_value_explained(v, a, &fig.metric, &run.analysis),
                _ => Err(Undefined(format!(
                    "variant `{}` is not in this run",
                    fig.variant
                ))),
            };
            let (measured, note) = match measured {
                Ok(x) => (Some(x), None),
                Err(why) => (None, Some(why.0)),
            };
            let finite_incident = Some(fig.incident_value).filter(|x| x.is_finite());
            FidelityRow {
                variant: fig.variant.clone(),
                metric: fig.metric.to_string(),
                label: fig.label.clone(),
                incident_value: fig.incident_value,
                measured,
                difference: measured.zip(finite_incident).map(|(m, i)| m - i),
                ratio: measured
                    .zip(finite_incident.filter(|i| *i != 0.0))
                    .map(|(m, i)| m / i),
                note,
            }
        })
        .collect()
}
