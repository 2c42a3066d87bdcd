//! Stored runs → one `ExportMetricsServiceRequest`: which ttfx value lands under which
//! OTLP name and unit (docs/field.md's table is this list), one data point per run and
//! value, at the run's own time, delta temporality.
//!
//! Exactness: a histogram data point holds one run's value as its sum, min and max
//! (count 1), so a backend reads back the stored number; milliseconds become seconds by
//! one f64 division by 1000 (the nearest double to the exact quotient).

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    AggregationTemporality, Gauge, Histogram, HistogramDataPoint, Metric, NumberDataPoint,
    ResourceMetrics, ScopeMetrics, metric, number_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use ttfx_core::Milestone;

use crate::run::{StoredRun, metric_attributes, text, unix_nanos};
use crate::semconv::{self, GenAiNames};

/// Where a value comes from in a stored run.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// A per-request metric (`runs` column / the report's `metrics`), in ms unless the
    /// instrument counts tokens.
    Metric(&'static str),
    /// A milestone's time since `request_start`, in ms.
    Milestone(Milestone),
}

/// One histogram ttfx exports.
#[derive(Debug, Clone, Copy)]
pub struct Instrument {
    pub name: &'static str,
    pub unit: &'static str,
    pub description: &'static str,
    pub source: Source,
    /// Extra attribute the conventions require for this instrument.
    pub extra: Option<(&'static str, &'static str)>,
}

const fn seconds(name: &'static str, description: &'static str, source: Source) -> Instrument {
    Instrument {
        name,
        unit: "s",
        description,
        source,
        extra: None,
    }
}

/// Every histogram, in docs/field.md's order. The `gen_ai.*` ones are the conventions'
/// (v1.41.0); `ttfx.*` ones are what only a browser sees.
pub const INSTRUMENTS: [Instrument; 7] = [
    seconds(
        semconv::TIME_TO_FIRST_CHUNK,
        "Request start to the first token of the stream (ttfx ttft_ms), in the browser",
        Source::Metric("ttft_ms"),
    ),
    seconds(
        semconv::TIME_PER_OUTPUT_CHUNK,
        "The run's mean time per output token after the first (ttfx tpot_ms), once per run",
        Source::Metric("tpot_ms"),
    ),
    seconds(
        semconv::OPERATION_DURATION,
        "Request start to the stream's end (ttfx e2e_ms), in the browser",
        Source::Metric("e2e_ms"),
    ),
    Instrument {
        name: semconv::TOKEN_USAGE,
        unit: "{token}",
        description: "Output tokens of the run (ttfx output_tokens)",
        source: Source::Metric("output_tokens"),
        extra: Some((semconv::TOKEN_TYPE, "output")),
    },
    seconds(
        "ttfx.client.time_to_first_visible_token",
        "Request start to the first visible answer text (ttfx ttft_visible_ms)",
        Source::Metric("ttft_visible_ms"),
    ),
    seconds(
        "ttfx.client.time_to_first_paint",
        "Request start to that text painted (ttfx milestone first_paint)",
        Source::Milestone(Milestone::FirstPaint),
    ),
    seconds(
        "ttfx.client.time_to_first_audio",
        "Request start to the first audible sample of the reply (ttfx ttfa_ms)",
        Source::Metric("ttfa_ms"),
    ),
];

/// The gauge of the client/server gaps: one point per run and milestone, attribute
/// `ttfx.milestone`; a gauge because a gap may be negative (a histogram's sum may not).
pub const GAP_NAME: &str = "ttfx.client.server_gap";

/// What a batch is exported as: the resource and the names' version.
#[derive(Debug, Clone)]
pub struct Export {
    pub resource: Vec<KeyValue>,
    pub names: GenAiNames,
}

impl Export {
    pub fn resource(&self) -> Resource {
        Resource {
            attributes: self.resource.clone(),
            ..Default::default()
        }
    }

    pub fn scope(&self) -> InstrumentationScope {
        InstrumentationScope {
            name: "ttfx".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            ..Default::default()
        }
    }
}

/// The value `source` gives for `run`, in the instrument's unit (ms → s for times).
pub fn value_of(run: &StoredRun, instrument: &Instrument) -> Option<f64> {
    let r = &run.report.run;
    let raw = match instrument.source {
        Source::Metric(name) => r.metrics.get(name),
        Source::Milestone(m) => r.milestones.get(m),
    }?;
    if !raw.is_finite() {
        return None;
    }
    Some(if instrument.unit == "s" {
        raw / 1000.0
    } else {
        raw
    })
}

fn bucket_counts(bounds: &[f64], value: f64) -> Vec<u64> {
    // Bucket i holds (bounds[i-1], bounds[i]]; the last one everything above.
    let at = bounds
        .iter()
        .position(|b| value <= *b)
        .unwrap_or(bounds.len());
    (0..=bounds.len()).map(|i| u64::from(i == at)).collect()
}

/// The run's data point window: from its request start to its arrival at the collector
/// (never empty: at least 1 ns).
fn window(run: &StoredRun) -> (u64, u64) {
    let start = unix_nanos(run.at_unix_ms);
    (start, unix_nanos(run.received_unix_ms).max(start + 1))
}

/// The metrics request for `runs` (instruments with no value in any run are left out).
pub fn request(runs: &[StoredRun], export: &Export) -> ExportMetricsServiceRequest {
    let mut metrics = Vec::new();
    for instrument in &INSTRUMENTS {
        let bounds: &[f64] = if instrument.unit == "s" {
            &semconv::SECONDS_BOUNDS
        } else {
            &semconv::TOKEN_BOUNDS
        };
        let points: Vec<HistogramDataPoint> = runs
            .iter()
            .filter_map(|run| {
                let v = value_of(run, instrument)?;
                let mut attributes = metric_attributes(run);
                if let Some((k, val)) = instrument.extra {
                    attributes.push(text(k, val));
                }
                let (start, time) = window(run);
                Some(HistogramDataPoint {
                    attributes,
                    start_time_unix_nano: start,
                    time_unix_nano: time,
                    count: 1,
                    sum: Some(v),
                    bucket_counts: bucket_counts(bounds, v),
                    explicit_bounds: bounds.to_vec(),
                    min: Some(v),
                    max: Some(v),
                    ..Default::default()
                })
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        metrics.push(Metric {
            name: instrument.name.to_owned(),
            description: instrument.description.to_owned(),
            unit: instrument.unit.to_owned(),
            data: Some(metric::Data::Histogram(Histogram {
                data_points: points,
                aggregation_temporality: AggregationTemporality::Delta as i32,
            })),
            ..Default::default()
        });
    }
    let gaps: Vec<NumberDataPoint> = runs
        .iter()
        .flat_map(|run| {
            let (_, time) = window(run);
            run.report
                .run
                .gaps
                .iter()
                .filter(|(_, v)| v.is_finite())
                .map(move |(name, v)| {
                    let mut attributes = metric_attributes(run);
                    attributes.push(text("ttfx.milestone", name));
                    NumberDataPoint {
                        attributes,
                        time_unix_nano: time,
                        value: Some(number_data_point::Value::AsDouble(v / 1000.0)),
                        ..Default::default()
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect();
    if !gaps.is_empty() {
        metrics.push(Metric {
            name: GAP_NAME.to_owned(),
            description: "Client minus server time of one milestone (ttfx gap.<milestone>_ms)"
                .to_owned(),
            unit: "s".to_owned(),
            data: Some(metric::Data::Gauge(Gauge { data_points: gaps })),
            ..Default::default()
        });
    }
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(export.resource()),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(export.scope()),
                metrics,
                schema_url: export.names.schema_url().to_owned(),
            }],
            schema_url: export.names.schema_url().to_owned(),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/field.md's table names every instrument with its unit: the doc cannot fall
    /// behind the code.
    #[test]
    fn the_field_doc_table_names_every_instrument_and_unit() {
        let doc = include_str!("../../../docs/field.md");
        let rows: Vec<&str> = doc.lines().filter(|l| l.starts_with('|')).collect();
        let names = INSTRUMENTS
            .iter()
            .map(|i| (i.name, i.unit))
            .chain([(GAP_NAME, "s")]);
        for (name, unit) in names {
            let row = rows
                .iter()
                .find(|r| r.contains(&format!("| `{name}` |")))
                .unwrap_or_else(|| panic!("docs/field.md has no row for {name}"));
            assert!(row.ends_with(&format!("| `{unit}` |")), "{row}");
        }
    }

    #[test]
    fn one_value_lands_in_exactly_one_bucket() {
        let b = [1.0, 2.0];
        assert_eq!(bucket_counts(&b, 0.5), vec![1, 0, 0]);
        assert_eq!(bucket_counts(&b, 2.0), vec![0, 1, 0]);
        assert_eq!(bucket_counts(&b, 9.0), vec![0, 0, 1]);
    }
}
