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
    /// --bench, the one GET /field/gap answers).
    #[arg(long)]
    pub json: bool,
}
