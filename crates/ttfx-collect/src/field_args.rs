//! `ttfx field`'s options (the binary's command line embeds them).

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct FieldArgs {
    /// The collector's SQLite file.
    pub file: PathBuf,

    /// One metric (e.g. ttft_visible_ms, gap.first_token_ms); default: every metric with
    /// values.
    #[arg(long)]
    pub metric: Option<String>,

    /// Group by a dimension: label, target, page_path, engine, engine_version, outcome,
    /// failure_class, http_status, paint_method, cross_origin_isolated, hidden, dialect,
    /// sample_rate, source.
    #[arg(long, value_name = "DIM")]
    pub by: Option<String>,

    /// Only runs that arrived in the last DURATION (30m, 24h, 7d, 2w)
    #[arg(long, value_name = "DURATION")]
    pub since: Option<String>,

    /// Only runs whose dimension has this value, DIM=VALUE (empty: absent); repeatable.
    #[arg(long = "where", value_name = "DIM=VALUE")]
    pub filters: Vec<String>,

    /// Set a stored benchmark (`ttfx import --into`) beside the field: its name, id, or
    /// `latest`. Prints the gap, metric by metric, at p50/p90/p99. docs/import.md.
    #[arg(long, value_name = "NAME|latest")]
    pub bench: Option<String>,

    /// Print the summary as JSON (the document GET /field/summary answers; with
    /// --bench, the one GET /field/gap answers; with --health, GET /field/health's).
    #[arg(long)]
    pub json: bool,

    /// The store's state instead of percentiles: runs, file size, and the OTLP export's
    /// exported, pending, dropped (backlog full), refused (permanent 4xx) and last error.
    #[arg(long, conflicts_with_all = ["metric", "by", "bench", "export_otlp"])]
    pub health: bool,

    /// Export the stored runs (all, or --since) to this OTLP/HTTP endpoint, the base URL
    /// (`/v1/metrics` and `/v1/traces` are appended), and print how many went. Not
    /// through the outbox: a backfill, e.g. of runs stored before export was on.
    #[arg(long, value_name = "URL", conflicts_with_all = ["metric", "by", "bench", "filters"])]
    pub export_otlp: Option<String>,

    /// A header sent with each export request, KEY=VALUE (repeatable); a secret, never
    /// printed. OTEL_EXPORTER_OTLP_HEADERS is read too.
    #[arg(long, value_name = "KEY=VALUE", requires = "export_otlp",
          value_parser = |s: &str| Ok::<_, String>(crate::read_access::Secret(s.to_owned())))]
    pub otlp_header: Vec<crate::read_access::Secret>,

    /// http/protobuf (default) or http/json; else OTEL_EXPORTER_OTLP_PROTOCOL.
    #[arg(long, value_name = "PROTOCOL", requires = "export_otlp")]
    pub otlp_protocol: Option<String>,

    /// The resource's service.name (default: OTEL_SERVICE_NAME, else `ttfx`).
    #[arg(long, value_name = "NAME", requires = "export_otlp")]
    pub otlp_service_name: Option<String>,
}
