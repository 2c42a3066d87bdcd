//! Stored runs → one `ExportTraceServiceRequest`: each run is a client span from its
//! request start to its last milestone, its milestones as span events, its dimensions
//! as attributes, so a backend can show one user's wait.
//!
//! Span and trace ids are derived from the database's salt and the run's row (SHA-256),
//! so a run sent twice (a retry after a lost answer, a backfill after a live export)
//! carries the same ids and a backend can tell the duplicate.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::{
    ResourceSpans, ScopeSpans, Span, Status, span, status,
};
use sha2::{Digest, Sha256};

use crate::metrics::Export;
use crate::run::{
    StoredRun, boolean, double, error_type, int, metric_attributes, name_of, text, unix_nanos,
};
use crate::semconv;

/// The trace id (16 bytes) and span id (8 bytes) of the run stored in `row_id` of the
/// database whose salt is `salt`.
pub fn ids(salt: &[u8], row_id: i64) -> ([u8; 16], [u8; 8]) {
    let digest = Sha256::new()
        .chain_update(b"ttfx-otlp span v1")
        .chain_update(salt)
        .chain_update(row_id.to_be_bytes())
        .finalize();
    let mut trace = [0u8; 16];
    let mut span = [0u8; 8];
    trace.copy_from_slice(&digest[..16]);
    span.copy_from_slice(&digest[16..24]);
    // All-zero ids are invalid in OTLP; a hash gives one with probability 2^-64.
    trace[15] |= u8::from(trace == [0; 16]);
    span[7] |= u8::from(span == [0; 8]);
    (trace, span)
}

/// The run's dimensions as span attributes (`ttfx.*`), besides the GenAI ones.
fn dimensions(run: &StoredRun) -> Vec<KeyValue> {
    let r = &run.report.run;
    let mut a = Vec::new();
    let texts = [
        ("ttfx.run.id", r.id.as_ref()),
        ("ttfx.target", r.target.as_ref()),
        ("ttfx.page_path", r.page_path.as_ref()),
        ("ttfx.engine_version", r.engine_version.as_ref()),
        ("ttfx.dialect", r.dialect.as_ref()),
        ("ttfx.transport", r.transport.as_ref()),
    ];
    for (k, v) in texts {
        if let Some(v) = v {
            a.push(text(k, v));
        }
    }
    if let Some(o) = name_of(&r.outcome) {
        a.push(text("ttfx.outcome", &o));
    }
    if let Some(p) = r.paint_method.as_ref().and_then(name_of) {
        a.push(text("ttfx.paint_method", &p));
    }
    if let Some(s) = r.http_status {
        a.push(int("http.response.status_code", i64::from(s)));
    }
    if let Some(c) = r.cross_origin_isolated {
        a.push(boolean("ttfx.cross_origin_isolated", c));
    }
    a.push(boolean("ttfx.hidden", r.hidden));
    if let Some(t) = r.metrics.get("output_tokens").filter(|t| t.is_finite()) {
        // The conventions' attribute is an int; token counts are whole numbers.
        a.push(int(semconv::USAGE_OUTPUT_TOKENS, t.round() as i64));
    }
    // Every per-request metric as it is stored (ms, counts), for drilling in.
    for (name, v) in r.metrics.iter().filter(|(_, v)| v.is_finite()) {
        a.push(double(&format!("ttfx.metric.{name}"), v));
    }
    a
}

fn one_span(run: &StoredRun, salt: &[u8]) -> Span {
    let r = &run.report.run;
    let (trace_id, span_id) = ids(salt, run.row_id);
    let start_ms = run.at_unix_ms;
    let end_offset = r
        .milestones
        .iter()
        .map(|(_, t)| t)
        .filter(|t| t.is_finite())
        .fold(0.0_f64, f64::max);
    let events = r
        .milestones
        .iter()
        .filter(|(_, t)| t.is_finite())
        .map(|(m, t)| span::Event {
            time_unix_nano: unix_nanos(start_ms + t),
            name: m.as_str().to_owned(),
            attributes: vec![double("ttfx.offset_ms", t)],
            ..Default::default()
        })
        .collect();
    let mut attributes = metric_attributes(run);
    attributes.extend(dimensions(run));
    let error = error_type(&run.report);
    Span {
        trace_id: trace_id.to_vec(),
        span_id: span_id.to_vec(),
        // The conventions' span name is "{operation} {model}"; a field report has no model.
        name: semconv::OPERATION_CHAT.to_owned(),
        kind: span::SpanKind::Client as i32,
        start_time_unix_nano: unix_nanos(start_ms),
        end_time_unix_nano: unix_nanos(start_ms + end_offset).max(unix_nanos(start_ms)),
        attributes,
        events,
        status: Some(Status {
            message: error.clone().unwrap_or_default(),
            code: if error.is_some() {
                status::StatusCode::Error as i32
            } else {
                status::StatusCode::Unset as i32
            },
        }),
        ..Default::default()
    }
}

/// The trace request for `runs`, ids from `salt`.
pub fn request(runs: &[StoredRun], salt: &[u8], export: &Export) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(export.resource()),
            scope_spans: vec![ScopeSpans {
                scope: Some(export.scope()),
                spans: runs.iter().map(|run| one_span(run, salt)).collect(),
                schema_url: export.names.schema_url().to_owned(),
            }],
            schema_url: export.names.schema_url().to_owned(),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_per_row_and_differ_between_rows_and_files() {
        assert_eq!(ids(b"a", 1), ids(b"a", 1));
        assert_ne!(ids(b"a", 1), ids(b"a", 2));
        assert_ne!(ids(b"a", 1), ids(b"b", 1));
    }
}
