//! Stored field runs as OpenTelemetry: OTLP/HTTP metrics (the GenAI semantic
//! conventions' histograms, and `ttfx.*` ones for what only a browser sees) and one
//! client span per run, and the client that posts them with retry (docs/field.md,
//! "OTLP export").
//!
//! - semconv.rs  the conventions' version, names, units, buckets; the opt-in variable
//! - run.rs      a stored run; its GenAI attributes (provider, server, error type)
//! - metrics.rs  runs → ExportMetricsServiceRequest (the name/unit table)
//! - trace.rs    runs → ExportTraceServiceRequest (a client span per run, milestones as events)
//! - config.rs   flags over OTEL_EXPORTER_OTLP_* variables; header values kept secret
//! - backoff.rs  exponential backoff with jitter; Retry-After
//! - client.rs   encode (protobuf/JSON), POST, retry or refuse
//! - error.rs    ConfigError, SendError
//!
//! The wire types are the official ones (`opentelemetry-proto`, generated from the
//! OTLP .proto files), never hand-written. It depends on ttfx-core (the field report) only:
//! the collector (ttfx-collect) owns the database, the outbox and the drainer, and
//! hands this crate runs as [`StoredRun`]s, so the dependency runs one way and this crate
//! knows no SQL.

pub mod backoff;
pub mod client;
pub mod config;
pub mod error;
pub mod metrics;
pub mod run;
pub mod semconv;
pub mod trace;

pub use client::{Delivered, Exporter, Retrying};
pub use config::{Config, Flags, Protocol};
pub use error::{ConfigError, SendError};
pub use run::StoredRun;

/// The wire types, for receivers in tests and tools.
pub use opentelemetry_proto as proto;
