//! The collector's SQLite file: open (refusing files that are not ttfx databases),
//! migrate, insert, and remove old rows.
//!
//! A ttfx database says so in its header: `PRAGMA application_id` is [`APPLICATION_ID`]
//! ("ttfx" in ASCII) and `PRAGMA user_version` is the schema version its migrations
//! reached. A new or empty file becomes one; any other file is refused before anything
//! is written to it. The schema is docs/field.md's "Schema".

use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, Transaction};
use serde::Serialize;
use ttfx_core::field::FieldReport;

/// `PRAGMA application_id` of a ttfx database: "ttfx" in ASCII.
pub const APPLICATION_ID: i32 = 0x7474_6678;

/// The schema version this build migrates to (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// Migration `i` takes a database from version `i` to `i + 1`. Never edit one that has
/// shipped: add the next.
const MIGRATIONS: [&str; 10] = [
    MIGRATION_1,
    MIGRATION_2,
    MIGRATION_3,
    MIGRATION_4,
    MIGRATION_RECEIVED_INDEX,
    MIGRATION_OUTBOX,
    MIGRATION_QUERY_INDEXES,
    MIGRATION_GAP_COLUMNS,
    MIGRATION_NETWORK_AND_PAINT,
    MIGRATION_REQUEST_QUEUED,
];

/// Version 1: one row per run. Dimensions, the run's time, one column per metric, the
/// field report itself.
const MIGRATION_1: &str = "
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    at_unix_ms REAL NOT NULL,
    received_unix_ms REAL NOT NULL,
    request_start_unix_ms REAL,
    source TEXT NOT NULL,
    run_id TEXT,
    label TEXT,
    target TEXT,
    page_path TEXT,
    engine TEXT,
    engine_version TEXT,
    outcome TEXT NOT NULL,
    failure_class TEXT,
    http_status INTEGER,
    paint_method TEXT,
    cross_origin_isolated INTEGER,
    hidden INTEGER NOT NULL,
    dialect TEXT,
    sample_rate REAL NOT NULL,
    ttft_ms REAL,
    ttft_visible_ms REAL,
    e2e_ms REAL,
    tpot_ms REAL,
    output_tokens REAL,
    output_tokens_per_s REAL,
    decode_tokens_per_s REAL,
    dom_lag_ms REAL,
    render_lag_ms REAL,
    ttfa_ms REAL,
    ttfa_from_tts_ms REAL,
    rtf REAL,
    audio_arrival_rate REAL,
    audio_behind_text_ms REAL,
    underrun_count REAL,
    underrun_silence_ms REAL,
    handoff_time_lost_ms REAL,
    stall_count REAL,
    report TEXT NOT NULL
);
CREATE INDEX runs_at ON runs (at_unix_ms);
";

/// Version 2: a voice turn's metrics (#19): the silence from the end of the user's
/// speech to the reply heard, its seven stages, and a barge-in's interruption.
const MIGRATION_2: &str = "
ALTER TABLE runs ADD COLUMN voice_to_voice_ms REAL;
ALTER TABLE runs ADD COLUMN stage_endpointing_ms REAL;
ALTER TABLE runs ADD COLUMN stage_transcription_ms REAL;
ALTER TABLE runs ADD COLUMN stage_llm_request_ms REAL;
ALTER TABLE runs ADD COLUMN stage_llm_first_token_ms REAL;
ALTER TABLE runs ADD COLUMN stage_first_sentence_ms REAL;
ALTER TABLE runs ADD COLUMN stage_tts_first_byte_ms REAL;
ALTER TABLE runs ADD COLUMN stage_playout_ms REAL;
ALTER TABLE runs ADD COLUMN interrupt_ms REAL;
";

/// Version 3 (#20): the UI's own delay between the user's submit and the request, and
/// the transport the stream came over.
const MIGRATION_3: &str = "
ALTER TABLE runs ADD COLUMN submit_delay_ms REAL;
ALTER TABLE runs ADD COLUMN transport TEXT;
";

/// Version 4 (#29): benchmark runs imported from other tools' result files (`ttfx
/// import --into`), to set beside the field. One row per run of a file (a file can hold
/// several: JSON Lines, sweeps); a file is known by its SHA-256, so importing it again
/// stores nothing. Each metric keeps its percentiles and, when the file had them, its
/// per-request values (ms, ascending, f64 little-endian) so any percentile can be read.
const MIGRATION_4: &str = "
CREATE TABLE benchmarks (
    id INTEGER PRIMARY KEY,
    imported_unix_ms REAL NOT NULL,
    file_name TEXT NOT NULL,
    file_sha256 TEXT NOT NULL,
    file_bytes INTEGER NOT NULL,
    part INTEGER NOT NULL,
    parts INTEGER NOT NULL,
    tool TEXT NOT NULL,
    tool_version TEXT,
    model TEXT,
    load TEXT NOT NULL,
    label TEXT,
    completed INTEGER NOT NULL,
    failed INTEGER NOT NULL,
    notes TEXT NOT NULL,
    UNIQUE (file_sha256, part)
);
CREATE TABLE benchmark_metrics (
    benchmark_id INTEGER NOT NULL REFERENCES benchmarks (id) ON DELETE CASCADE,
    metric TEXT NOT NULL,
    origin TEXT NOT NULL,
    count INTEGER,
    mean REAL,
    p50 REAL,
    p90 REAL,
    p95 REAL,
    p99 REAL,
    ms_values BLOB,
    PRIMARY KEY (benchmark_id, metric)
);
";

/// Version 5 (#31): retention and `since` count from a run's arrival (the collector's
/// clock), not from the client's: a page whose clock is months off must not have what
/// arrived today removed, nor left out of "the last 24 h". Their index.
const MIGRATION_RECEIVED_INDEX: &str = "
CREATE INDEX runs_received ON runs (received_unix_ms);
";

/// The column the collector's time windows read (retention, `since`, series buckets):
/// when the run arrived, by the collector's own clock. A run's own time (`at_unix_ms`,
/// the client's clock) is kept and shown, never trusted to place it.
pub const ARRIVAL: &str = "received_unix_ms";

/// Version 6, OTLP export (#31): the outbox of runs stored but not yet exported (a row per run,
/// written in the run's own transaction when `ttfx serve --otlp-endpoint` is on, deleted
/// once a receiver accepted it), and the export's counters, kept across restarts. `salt`
/// makes the span ids of this file's runs unlike any other file's (crates/ttfx-otlp's
/// trace.rs). Self-contained (`IF NOT EXISTS`, `OR IGNORE`): it does not depend on the
/// migrations around it.
const MIGRATION_OUTBOX: &str = "
CREATE TABLE IF NOT EXISTS otlp_outbox (
    run INTEGER PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS otlp_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    salt BLOB NOT NULL,
    exported INTEGER NOT NULL DEFAULT 0,
    dropped INTEGER NOT NULL DEFAULT 0,
    refused INTEGER NOT NULL DEFAULT 0,
    rejected INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    last_error_unix_ms REAL
);
INSERT OR IGNORE INTO otlp_state (id, salt) VALUES (1, randomblob(16));
";

/// Version 7 (#31): a narrow copy of what the queries read, without the report: a summary, series
/// or histogram of a metric column, grouped or filtered by a common dimension, reads this
/// index alone (a covering index) instead of every row's page. With a million runs of
/// 4.9 KB the table's pages are about 1 GB and the index's about 160 MB: a summary over
/// all of them read in 0.9 s, now in 0.24 s (`cargo xtask bench collect`). Its cost is
/// one more B-tree entry per insert, appended at the end (runs arrive in time order).
/// The gaps (`json_extract` of the report) and the rarer dimensions still read the rows.
/// It leads with the arrival, the time every window reads ([`ARRIVAL`]).
const MIGRATION_QUERY_INDEXES: &str = "
CREATE INDEX runs_narrow ON runs (
    received_unix_ms, sample_rate, label, engine, page_path, outcome, source, hidden,
    ttft_ms, ttft_visible_ms, e2e_ms, tpot_ms, output_tokens, output_tokens_per_s,
    decode_tokens_per_s, dom_lag_ms, render_lag_ms, ttfa_ms, ttfa_from_tts_ms, rtf,
    audio_arrival_rate, audio_behind_text_ms, underrun_count, underrun_silence_ms,
    handoff_time_lost_ms, stall_count, voice_to_voice_ms, stage_endpointing_ms,
    stage_transcription_ms, stage_llm_request_ms, stage_llm_first_token_ms,
    stage_first_sentence_ms, stage_tts_first_byte_ms, stage_playout_ms, interrupt_ms,
    submit_delay_ms
);
";

/// Version 8 (#31): the client − server gaps in columns of their own (`gap_<milestone>_ms`),
/// filled from the report at insert (and here, once, for the rows already stored), with a
/// covering index like [`MIGRATION_QUERY_INDEXES`]'. A summary of every metric (`ttfx
/// field FILE.db`) read each gap with `json_extract` over every stored report: 22 passes
/// over about 5 GB at a million runs, minutes; the columns make it one pass over an index.
/// The backfill reads each report once; at a million runs it takes a while, once.
///
/// And `metrics_seen`: the metric columns (and gap columns) at least one stored run has a
/// value in, kept by every insert. A summary of every metric reads only those: most of
/// the 50 are a voice turn's or a barge-in's, empty in a chat product's file, and each
/// column read costs the same per row whether it holds a value or not. A name stays when
/// retention removes the runs that had it (reading an empty column is only slower).
const MIGRATION_GAP_COLUMNS: &str = "
ALTER TABLE runs ADD COLUMN gap_speech_start_ms REAL;
ALTER TABLE runs ADD COLUMN gap_speech_end_ms REAL;
ALTER TABLE runs ADD COLUMN gap_stt_first_partial_ms REAL;
ALTER TABLE runs ADD COLUMN gap_stt_final_ms REAL;
ALTER TABLE runs ADD COLUMN gap_submit_ms REAL;
ALTER TABLE runs ADD COLUMN gap_request_start_ms REAL;
ALTER TABLE runs ADD COLUMN gap_headers_ms REAL;
ALTER TABLE runs ADD COLUMN gap_first_byte_ms REAL;
ALTER TABLE runs ADD COLUMN gap_first_event_ms REAL;
ALTER TABLE runs ADD COLUMN gap_first_token_ms REAL;
ALTER TABLE runs ADD COLUMN gap_first_visible_token_ms REAL;
ALTER TABLE runs ADD COLUMN gap_first_dom_ms REAL;
ALTER TABLE runs ADD COLUMN gap_first_paint_ms REAL;
ALTER TABLE runs ADD COLUMN gap_first_sentence_ms REAL;
ALTER TABLE runs ADD COLUMN gap_tts_request_ms REAL;
ALTER TABLE runs ADD COLUMN gap_first_audio_byte_ms REAL;
ALTER TABLE runs ADD COLUMN gap_first_audio_scheduled_ms REAL;
ALTER TABLE runs ADD COLUMN gap_first_audio_out_ms REAL;
ALTER TABLE runs ADD COLUMN gap_last_token_ms REAL;
ALTER TABLE runs ADD COLUMN gap_done_ms REAL;
ALTER TABLE runs ADD COLUMN gap_aborted_ms REAL;
ALTER TABLE runs ADD COLUMN gap_error_ms REAL;
UPDATE runs SET
    gap_speech_start_ms = json_extract(report, '$.run.gaps.speech_start'),
    gap_speech_end_ms = json_extract(report, '$.run.gaps.speech_end'),
    gap_stt_first_partial_ms = json_extract(report, '$.run.gaps.stt_first_partial'),
    gap_stt_final_ms = json_extract(report, '$.run.gaps.stt_final'),
    gap_submit_ms = json_extract(report, '$.run.gaps.submit'),
    gap_request_start_ms = json_extract(report, '$.run.gaps.request_start'),
    gap_headers_ms = json_extract(report, '$.run.gaps.headers'),
    gap_first_byte_ms = json_extract(report, '$.run.gaps.first_byte'),
    gap_first_event_ms = json_extract(report, '$.run.gaps.first_event'),
    gap_first_token_ms = json_extract(report, '$.run.gaps.first_token'),
    gap_first_visible_token_ms = json_extract(report, '$.run.gaps.first_visible_token'),
    gap_first_dom_ms = json_extract(report, '$.run.gaps.first_dom'),
    gap_first_paint_ms = json_extract(report, '$.run.gaps.first_paint'),
    gap_first_sentence_ms = json_extract(report, '$.run.gaps.first_sentence'),
    gap_tts_request_ms = json_extract(report, '$.run.gaps.tts_request'),
    gap_first_audio_byte_ms = json_extract(report, '$.run.gaps.first_audio_byte'),
    gap_first_audio_scheduled_ms = json_extract(report, '$.run.gaps.first_audio_scheduled'),
    gap_first_audio_out_ms = json_extract(report, '$.run.gaps.first_audio_out'),
    gap_last_token_ms = json_extract(report, '$.run.gaps.last_token'),
    gap_done_ms = json_extract(report, '$.run.gaps.done'),
    gap_aborted_ms = json_extract(report, '$.run.gaps.aborted'),
    gap_error_ms = json_extract(report, '$.run.gaps.error')
WHERE json_type(report, '$.run.gaps') = 'object';
CREATE INDEX runs_gaps ON runs (
    received_unix_ms, sample_rate, label, engine, page_path, outcome, source, hidden,
    gap_speech_start_ms, gap_speech_end_ms, gap_stt_first_partial_ms, gap_stt_final_ms,
    gap_submit_ms, gap_request_start_ms, gap_headers_ms, gap_first_byte_ms,
    gap_first_event_ms, gap_first_token_ms, gap_first_visible_token_ms, gap_first_dom_ms,
    gap_first_paint_ms, gap_first_sentence_ms, gap_tts_request_ms, gap_first_audio_byte_ms,
    gap_first_audio_scheduled_ms, gap_first_audio_out_ms, gap_last_token_ms, gap_done_ms,
    gap_aborted_ms, gap_error_ms
);
CREATE TABLE metrics_seen (name TEXT PRIMARY KEY) WITHOUT ROWID;
INSERT INTO metrics_seen (name)
    SELECT 'ttft_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE ttft_ms IS NOT NULL)
    UNION ALL
    SELECT 'ttft_visible_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE ttft_visible_ms IS NOT NULL)
    UNION ALL
    SELECT 'e2e_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE e2e_ms IS NOT NULL)
    UNION ALL
    SELECT 'tpot_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE tpot_ms IS NOT NULL)
    UNION ALL
    SELECT 'output_tokens' WHERE EXISTS (SELECT 1 FROM runs WHERE output_tokens IS NOT NULL)
    UNION ALL
    SELECT 'output_tokens_per_s' WHERE EXISTS (SELECT 1 FROM runs WHERE output_tokens_per_s IS NOT NULL)
    UNION ALL
    SELECT 'decode_tokens_per_s' WHERE EXISTS (SELECT 1 FROM runs WHERE decode_tokens_per_s IS NOT NULL)
    UNION ALL
    SELECT 'dom_lag_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE dom_lag_ms IS NOT NULL)
    UNION ALL
    SELECT 'render_lag_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE render_lag_ms IS NOT NULL)
    UNION ALL
    SELECT 'ttfa_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE ttfa_ms IS NOT NULL)
    UNION ALL
    SELECT 'ttfa_from_tts_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE ttfa_from_tts_ms IS NOT NULL)
    UNION ALL
    SELECT 'rtf' WHERE EXISTS (SELECT 1 FROM runs WHERE rtf IS NOT NULL)
    UNION ALL
    SELECT 'audio_arrival_rate' WHERE EXISTS (SELECT 1 FROM runs WHERE audio_arrival_rate IS NOT NULL)
    UNION ALL
    SELECT 'audio_behind_text_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE audio_behind_text_ms IS NOT NULL)
    UNION ALL
    SELECT 'underrun_count' WHERE EXISTS (SELECT 1 FROM runs WHERE underrun_count IS NOT NULL)
    UNION ALL
    SELECT 'underrun_silence_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE underrun_silence_ms IS NOT NULL)
    UNION ALL
    SELECT 'handoff_time_lost_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE handoff_time_lost_ms IS NOT NULL)
    UNION ALL
    SELECT 'stall_count' WHERE EXISTS (SELECT 1 FROM runs WHERE stall_count IS NOT NULL)
    UNION ALL
    SELECT 'voice_to_voice_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE voice_to_voice_ms IS NOT NULL)
    UNION ALL
    SELECT 'stage_endpointing_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE stage_endpointing_ms IS NOT NULL)
    UNION ALL
    SELECT 'stage_transcription_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE stage_transcription_ms IS NOT NULL)
    UNION ALL
    SELECT 'stage_llm_request_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE stage_llm_request_ms IS NOT NULL)
    UNION ALL
    SELECT 'stage_llm_first_token_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE stage_llm_first_token_ms IS NOT NULL)
    UNION ALL
    SELECT 'stage_first_sentence_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE stage_first_sentence_ms IS NOT NULL)
    UNION ALL
    SELECT 'stage_tts_first_byte_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE stage_tts_first_byte_ms IS NOT NULL)
    UNION ALL
    SELECT 'stage_playout_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE stage_playout_ms IS NOT NULL)
    UNION ALL
    SELECT 'interrupt_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE interrupt_ms IS NOT NULL)
    UNION ALL
    SELECT 'submit_delay_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE submit_delay_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_speech_start_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_speech_start_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_speech_end_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_speech_end_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_stt_first_partial_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_stt_first_partial_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_stt_final_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_stt_final_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_submit_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_submit_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_request_start_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_request_start_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_headers_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_headers_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_first_byte_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_first_byte_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_first_event_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_first_event_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_first_token_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_first_token_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_first_visible_token_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_first_visible_token_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_first_dom_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_first_dom_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_first_paint_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_first_paint_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_first_sentence_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_first_sentence_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_tts_request_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_tts_request_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_first_audio_byte_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_first_audio_byte_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_first_audio_scheduled_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_first_audio_scheduled_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_first_audio_out_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_first_audio_out_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_last_token_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_last_token_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_done_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_done_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_aborted_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_aborted_ms IS NOT NULL)
    UNION ALL
    SELECT 'gap_error_ms' WHERE EXISTS (SELECT 1 FROM runs WHERE gap_error_ms IS NOT NULL);
";

/// Version 9 (#32): `engine_hop_ms` (first_byte − response_start) and the gap columns of
/// the two new milestones, `response_start` and `paint_time`; both covering indexes are
/// made again with them, so a summary still reads one index per kind. No stored report
/// has these values, so there is nothing to backfill.
const MIGRATION_NETWORK_AND_PAINT: &str = "
ALTER TABLE runs ADD COLUMN engine_hop_ms REAL;
ALTER TABLE runs ADD COLUMN gap_response_start_ms REAL;
ALTER TABLE runs ADD COLUMN gap_paint_time_ms REAL;
DROP INDEX runs_narrow;
CREATE INDEX runs_narrow ON runs (
    received_unix_ms, sample_rate, label, engine, page_path, outcome, source, hidden,
    ttft_ms, ttft_visible_ms, e2e_ms, tpot_ms, output_tokens, output_tokens_per_s,
    decode_tokens_per_s, dom_lag_ms, render_lag_ms, ttfa_ms, ttfa_from_tts_ms, rtf,
    audio_arrival_rate, audio_behind_text_ms, underrun_count, underrun_silence_ms,
    handoff_time_lost_ms, stall_count, voice_to_voice_ms, stage_endpointing_ms,
    stage_transcription_ms, stage_llm_request_ms, stage_llm_first_token_ms,
    stage_first_sentence_ms, stage_tts_first_byte_ms, stage_playout_ms, interrupt_ms,
    submit_delay_ms, engine_hop_ms
);
DROP INDEX runs_gaps;
CREATE INDEX runs_gaps ON runs (
    received_unix_ms, sample_rate, label, engine, page_path, outcome, source, hidden,
    gap_speech_start_ms, gap_speech_end_ms, gap_stt_first_partial_ms, gap_stt_final_ms,
    gap_submit_ms, gap_request_start_ms, gap_headers_ms, gap_first_byte_ms,
    gap_first_event_ms, gap_first_token_ms, gap_first_visible_token_ms, gap_first_dom_ms,
    gap_first_paint_ms, gap_first_sentence_ms, gap_tts_request_ms, gap_first_audio_byte_ms,
    gap_first_audio_scheduled_ms, gap_first_audio_out_ms, gap_last_token_ms, gap_done_ms,
    gap_aborted_ms, gap_error_ms, gap_response_start_ms, gap_paint_time_ms
);
";

/// Version 10 (#33): `request_queued_ms`, how long the browser held the request before
/// sending it (the per-host connection limit's wait), and the narrow covering index made
/// again with it. No stored report has it, so there is nothing to backfill.
const MIGRATION_REQUEST_QUEUED: &str = "
ALTER TABLE runs ADD COLUMN request_queued_ms REAL;
DROP INDEX runs_narrow;
CREATE INDEX runs_narrow ON runs (
    received_unix_ms, sample_rate, label, engine, page_path, outcome, source, hidden,
    ttft_ms, ttft_visible_ms, e2e_ms, tpot_ms, output_tokens, output_tokens_per_s,
    decode_tokens_per_s, dom_lag_ms, render_lag_ms, ttfa_ms, ttfa_from_tts_ms, rtf,
    audio_arrival_rate, audio_behind_text_ms, underrun_count, underrun_silence_ms,
    handoff_time_lost_ms, stall_count, voice_to_voice_ms, stage_endpointing_ms,
    stage_transcription_ms, stage_llm_request_ms, stage_llm_first_token_ms,
    stage_first_sentence_ms, stage_tts_first_byte_ms, stage_playout_ms, interrupt_ms,
    submit_delay_ms, engine_hop_ms, request_queued_ms
);
";

/// The column of a milestone's client − server gap (migration 8): `gap_<milestone>_ms`.
pub fn gap_column(m: ttfx_core::Milestone) -> String {
    format!("gap_{}_ms", m.as_str())
}

/// The metric columns, in the migrations' order: the per-request metrics of
/// `ttfx_core::metrics::SCALARS` (a test checks that every one has its column, so a new
/// metric needs a migration that adds it).
pub const METRIC_COLUMNS: [&str; 30] = [
    "ttft_ms",
    "ttft_visible_ms",
    "e2e_ms",
    "tpot_ms",
    "output_tokens",
    "output_tokens_per_s",
    "decode_tokens_per_s",
    "dom_lag_ms",
    "render_lag_ms",
    "ttfa_ms",
    "ttfa_from_tts_ms",
    "rtf",
    "audio_arrival_rate",
    "audio_behind_text_ms",
    "underrun_count",
    "underrun_silence_ms",
    "handoff_time_lost_ms",
    "stall_count",
    "voice_to_voice_ms",
    "stage_endpointing_ms",
    "stage_transcription_ms",
    "stage_llm_request_ms",
    "stage_llm_first_token_ms",
    "stage_first_sentence_ms",
    "stage_tts_first_byte_ms",
    "stage_playout_ms",
    "interrupt_ms",
    "submit_delay_ms",
    "engine_hop_ms",
    "request_queued_ms",
];

/// How a dimension's column holds its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DimKind {
    Text,
    /// 0 or 1 in SQLite, `false` / `true` in JSON.
    Bool,
    Int,
    Real,
}

/// A column a team slices by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dimension {
    pub name: &'static str,
    pub kind: DimKind,
}

const fn dim(name: &'static str, kind: DimKind) -> Dimension {
    Dimension { name, kind }
}

/// Every dimension column, in the order listings show them.
pub const DIMENSIONS: [Dimension; 15] = [
    dim("label", DimKind::Text),
    dim("target", DimKind::Text),
    dim("page_path", DimKind::Text),
    dim("engine", DimKind::Text),
    dim("engine_version", DimKind::Text),
    dim("outcome", DimKind::Text),
    dim("failure_class", DimKind::Text),
    dim("http_status", DimKind::Int),
    dim("paint_method", DimKind::Text),
    dim("cross_origin_isolated", DimKind::Bool),
    dim("hidden", DimKind::Bool),
    dim("dialect", DimKind::Text),
    dim("transport", DimKind::Text),
    dim("sample_rate", DimKind::Real),
    dim("source", DimKind::Text),
];

/// What was posted: a field report as the probe beacons it, a run taken from a run or
/// batch report, or a run the lab page served by this same `ttfx serve` measured
/// (`POST /collect?source=lab`, same origin only: docs/field.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Field,
    Run,
    Lab,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Field => "field",
            Source::Run => "run",
            Source::Lab => "lab",
        }
    }
}

/// One run to store.
#[derive(Debug, Clone)]
pub struct Row {
    pub report: FieldReport,
    pub source: Source,
    pub received_unix_ms: f64,
}

impl Row {
    /// The run's time: the client's wall clock at `request_start`, but never later than
    /// the report's arrival (a client clock that runs ahead cannot put a run in the
    /// future); the arrival when the report has no start time.
    pub fn at_unix_ms(&self) -> f64 {
        self.report
            .run
            .request_start_unix_ms
            .filter(|t| t.is_finite())
            .map_or(self.received_unix_ms, |t| t.min(self.received_unix_ms))
    }
}

/// Why a database was refused (each text names the file) or a write failed. Every text
/// is one line; SQLite's error is printed in it (no `source` chain, so a `{:#}` print
/// says it once).
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("{}: no such file", path.display())]
    Missing { path: PathBuf },
    #[error("{}: cannot open: {}", path.display(), one_line(cause))]
    CannotOpen {
        path: PathBuf,
        cause: rusqlite::Error,
    },
    #[error("{}: not a readable SQLite database ({})", path.display(), one_line(cause))]
    Unreadable {
        path: PathBuf,
        cause: rusqlite::Error,
    },
    #[error(
        "{}: not a ttfx database (application_id {app_id:#x}{}); give a new file or one \
         `ttfx serve --collect` made",
        path.display(),
        holding(tables)
    )]
    Foreign {
        path: PathBuf,
        app_id: i32,
        tables: Vec<String>,
    },
    #[error(
        "{}: schema version {version} is newer than this ttfx knows ({known}); use a newer \
         ttfx",
        path.display()
    )]
    Newer {
        path: PathBuf,
        version: i32,
        known: i32,
    },
    #[error(
        "{}: schema version {version} is not one ttfx writes (a foreign or damaged file); \
         give a file `ttfx serve --collect` made",
        path.display()
    )]
    BadVersion { path: PathBuf, version: i32 },
    #[error(
        "{}: schema version {version} is older than this ttfx reads ({known}), and reading \
         never migrates; migrate it once with `ttfx serve --collect {}` (or `ttfx import \
         --into`), or read it with the ttfx that wrote it",
        path.display(),
        path.display()
    )]
    Older {
        path: PathBuf,
        version: i32,
        known: i32,
    },
    #[error("{}: cannot use WAL mode (SQLite kept `{mode}`)", path.display())]
    NoWal { path: PathBuf, mode: String },
    #[error("{}: migration to version {to}: {}", path.display(), one_line(cause))]
    Migration {
        path: PathBuf,
        to: usize,
        cause: rusqlite::Error,
    },
    /// A statement of an insert or a removal failed.
    #[error("{}", one_line(.0))]
    Sql(rusqlite::Error),
    /// A report could not be written as the JSON the row keeps.
    #[error("{}", one_line(.0))]
    Encode(serde_json::Error),
}

impl DbError {
    /// SQLite refused to grow the file past its `max_page_count` (or the disk is full).
    pub fn is_full(&self) -> bool {
        matches!(self, DbError::Sql(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull))
    }
}

/// A pragma's whole-number answer (SQLite hands them over as i64; never negative).
fn pragma_count(conn: &Connection, sql: &str) -> Result<u64, DbError> {
    let n: i64 = conn
        .query_row(sql, [], |r| r.get(0))
        .map_err(DbError::Sql)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Caps the file at `max_mb` MiB through SQLite's `max_page_count` (an insert that would
/// grow it further fails whole with SQLITE_FULL). Returns the file's pages and page size;
/// SQLite never sets the cap below the pages a file already has.
pub fn cap(conn: &Connection, max_mb: u64) -> Result<(u64, u64), DbError> {
    let page_size = pragma_count(conn, "PRAGMA page_size")?;
    let pages = (max_mb.saturating_mul(1024 * 1024) / page_size.max(1)).max(1);
    pragma_count(conn, &format!("PRAGMA max_page_count = {pages}"))?;
    Ok((pragma_count(conn, "PRAGMA page_count")?, page_size))
}

/// The file's size as SQLite counts it (pages × page size; the WAL aside).
pub fn file_bytes(conn: &Connection) -> Result<u64, DbError> {
    Ok(pragma_count(conn, "PRAGMA page_count")? * pragma_count(conn, "PRAGMA page_size")?)
}

/// A foreign file's tables, as its refusal lists them.
fn holding(tables: &[String]) -> String {
    if tables.is_empty() {
        String::new()
    } else {
        format!(", tables {}", tables.join(", "))
    }
}

/// An opened database, or why it was refused.
pub type Opened = Result<Connection, DbError>;

/// Opens `path` as a ttfx database and migrates it to [`SCHEMA_VERSION`]. With
/// `create`, a missing file becomes a new database; without, it is an error. A file
/// that is not SQLite, is corrupt, holds another application's tables or a newer
/// schema is refused, and nothing is written to it.
pub fn open(path: &Path, create: bool) -> Opened {
    let path_buf = || path.to_path_buf();
    if !create && !path.exists() {
        return Err(DbError::Missing { path: path_buf() });
    }
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let mut conn =
        Connection::open_with_flags(path, flags).map_err(|cause| DbError::CannotOpen {
            path: path_buf(),
            cause,
        })?;
    // Reading the header and the schema is where SQLite finds a foreign or broken file.
    let unreadable = |cause| DbError::Unreadable {
        path: path_buf(),
        cause,
    };
    let version = identity(&conn, path, true)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(unreadable)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(DbError::NoWal {
            path: path_buf(),
            mode,
        });
    }
    // FULL: a commit's WAL frames are on the disk before the COMMIT returns, so a 204
    // survives a power loss too, not only the process being killed. It costs an fsync
    // per commit (4 ms here, docs/field.md "Durability: what a 204 promises").
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(unreadable)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(unreadable)?;
    // check_identity refused a negative version, so the cast keeps its value.
    for (from, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        migrate(&mut conn, sql, from as i32 + 1).map_err(|cause| DbError::Migration {
            path: path_buf(),
            to: from + 1,
            cause,
        })?;
    }
    Ok(conn)
}

/// Reads the file's application id, schema version and tables (where SQLite finds a
/// foreign or broken file) and checks them; the schema version. A fresh, empty file
/// passes only when `may_be_fresh` (a file being opened for writing, which migrates it).
fn identity(conn: &Connection, path: &Path, may_be_fresh: bool) -> Result<i32, DbError> {
    let unreadable = |cause| DbError::Unreadable {
        path: path.to_path_buf(),
        cause,
    };
    let app_id: i32 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(unreadable)?;
    let version: i32 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(unreadable)?;
    let tables = tables(conn).map_err(unreadable)?;
    let fresh = may_be_fresh && app_id == 0 && version == 0 && tables.is_empty();
    check_identity(path, fresh, app_id, version, tables)?;
    Ok(version)
}

/// A ttfx database (or a fresh file, when creating) at a version this build knows: a
/// foreign application id, a negative version (which a cast would turn into "nothing to
/// migrate") or a newer one is refused.
fn check_identity(
    path: &Path,
    fresh: bool,
    app_id: i32,
    version: i32,
    tables: Vec<String>,
) -> Result<(), DbError> {
    let path = path.to_path_buf();
    if !fresh && app_id != APPLICATION_ID {
        return Err(DbError::Foreign {
            path,
            app_id,
            tables,
        });
    }
    if version < 0 || (!fresh && version == 0) {
        return Err(DbError::BadVersion { path, version });
    }
    if version > SCHEMA_VERSION {
        return Err(DbError::Newer {
            path,
            version,
            known: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// Opens `path` for reading only (`ttfx field`): SQLite's read-only mode, no migration,
/// no pragma that writes. A missing file, a foreign one, one at another schema version
/// (older ones included: reading never migrates) is refused with what to do.
pub fn open_read_only(path: &Path) -> Opened {
    let path_buf = || path.to_path_buf();
    if !path.exists() {
        return Err(DbError::Missing { path: path_buf() });
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|cause| DbError::CannotOpen {
        path: path_buf(),
        cause,
    })?;
    let unreadable = |cause| DbError::Unreadable {
        path: path_buf(),
        cause,
    };
    let version = identity(&conn, path, false)?;
    if version < SCHEMA_VERSION {
        return Err(DbError::Older {
            path: path_buf(),
            version,
            known: SCHEMA_VERSION,
        });
    }
    // A writer (`ttfx serve --collect`) may hold the file: wait for it as it waits.
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(unreadable)?;
    Ok(conn)
}

/// Runs one migration and records its version in the same transaction, so a migration
/// either happened whole or not at all.
fn migrate(conn: &mut Connection, sql: &str, to: i32) -> rusqlite::Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(sql)?;
    tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    tx.pragma_update(None, "user_version", to)?;
    tx.commit()
}

fn tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
         ORDER BY name",
    )?;
    let names = stmt.query_map([], |r| r.get(0))?;
    names.collect()
}

/// An error as one line (SQLite's messages have none, but be sure).
pub fn one_line(e: &dyn std::fmt::Display) -> String {
    e.to_string().replace('\n', " ")
}

/// A serde enum's JSON name (`"completed"`, `"element_timing"`).
fn name_of<T: Serialize>(value: &T) -> Value {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => Value::Text(s),
        _ => Value::Null,
    }
}

fn text(value: Option<&String>) -> Value {
    value.map_or(Value::Null, |s| Value::Text(s.clone()))
}

fn real(value: Option<f64>) -> Value {
    value
        .filter(|v| v.is_finite())
        .map_or(Value::Null, Value::Real)
}

/// The columns an insert fills, in [`values`]' order: the metrics and gaps last. Made
/// once: every group commit of the writer thread reads them.
static VALUE_COLUMNS: std::sync::LazyLock<Vec<String>> = std::sync::LazyLock::new(value_columns);

/// The INSERT of one run, made once from [`VALUE_COLUMNS`].
static INSERT_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let marks = vec!["?"; VALUE_COLUMNS.len()].join(", ");
    format!(
        "INSERT INTO runs ({}) VALUES ({marks})",
        VALUE_COLUMNS.join(", ")
    )
});

fn value_columns() -> Vec<String> {
    let mut columns = vec![
        "at_unix_ms",
        "received_unix_ms",
        "request_start_unix_ms",
        "run_id",
        "report",
    ];
    columns.extend(DIMENSIONS.iter().map(|d| d.name));
    columns.extend(METRIC_COLUMNS);
    let mut columns: Vec<String> = columns.into_iter().map(str::to_owned).collect();
    columns.extend(ttfx_core::Milestone::ALL.into_iter().map(gap_column));
    columns
}

fn values(row: &Row) -> Result<Vec<Value>, serde_json::Error> {
    let r = &row.report.run;
    let mut v = vec![
        Value::Real(row.at_unix_ms()),
        Value::Real(row.received_unix_ms),
        real(r.request_start_unix_ms),
        text(r.id.as_ref()),
        Value::Text(serde_json::to_string(&row.report)?),
    ];
    for d in DIMENSIONS {
        v.push(match d.name {
            "label" => text(r.label.as_ref()),
            "target" => text(r.target.as_ref()),
            "page_path" => text(r.page_path.as_ref()),
            "engine" => text(r.engine.as_ref()),
            "engine_version" => text(r.engine_version.as_ref()),
            "outcome" => name_of(&r.outcome),
            "failure_class" => r.failure_class.as_ref().map_or(Value::Null, name_of),
            "http_status" => r
                .http_status
                .map_or(Value::Null, |s| Value::Integer(i64::from(s))),
            "paint_method" => r.paint_method.as_ref().map_or(Value::Null, name_of),
            "cross_origin_isolated" => r
                .cross_origin_isolated
                .map_or(Value::Null, |b| Value::Integer(i64::from(b))),
            "hidden" => Value::Integer(i64::from(r.hidden)),
            "dialect" => text(r.dialect.as_ref()),
            "transport" => text(r.transport.as_ref()),
            "sample_rate" => Value::Real(r.sample_rate),
            "source" => Value::Text(row.source.as_str().to_owned()),
            _ => Value::Null,
        });
    }
    v.extend(METRIC_COLUMNS.iter().map(|m| real(r.metrics.get(m))));
    v.extend(
        ttfx_core::Milestone::ALL
            .iter()
            .map(|m| real(r.gaps.get(m.as_str()))),
    );
    Ok(v)
}

/// Inserts every row in one transaction: all or none.
pub fn insert(conn: &mut Connection, rows: &[Row]) -> Result<(), DbError> {
    insert_queued(conn, rows, None)
}

/// Inserts every row in one transaction and, with `outbox` (the backlog's bound), queues
/// each for OTLP export in that same transaction: a run stored is a run queued.
pub fn insert_queued(
    conn: &mut Connection,
    rows: &[Row],
    outbox: Option<u64>,
) -> Result<(), DbError> {
    let tx = conn.transaction().map_err(DbError::Sql)?;
    let ids = insert_in(&tx, rows)?;
    if let Some(max_backlog) = outbox {
        crate::outbox::enqueue(&tx, &ids, max_backlog).map_err(DbError::Sql)?;
    }
    tx.commit().map_err(DbError::Sql)
}

/// The new rows' ids, in order. The metric and gap columns the rows have values in are
/// recorded in `metrics_seen` (a lookup each when already there).
fn insert_in(tx: &Transaction<'_>, rows: &[Row]) -> Result<Vec<i64>, DbError> {
    let columns = &*VALUE_COLUMNS;
    let first_metric = columns.len() - METRIC_COLUMNS.len() - ttfx_core::Milestone::ALL.len();
    let mut seen = vec![false; columns.len() - first_metric];
    let mut stmt = tx.prepare_cached(&INSERT_SQL).map_err(DbError::Sql)?;
    let mut ids = Vec::with_capacity(rows.len());
    for row in rows {
        let v = values(row).map_err(DbError::Encode)?;
        for (s, value) in seen.iter_mut().zip(&v[first_metric..]) {
            *s |= *value != Value::Null;
        }
        stmt.execute(rusqlite::params_from_iter(v))
            .map_err(DbError::Sql)?;
        ids.push(tx.last_insert_rowid());
    }
    let mut mark = tx
        .prepare_cached("INSERT OR IGNORE INTO metrics_seen (name) VALUES (?1)")
        .map_err(DbError::Sql)?;
    for (name, _) in columns[first_metric..]
        .iter()
        .zip(&seen)
        .filter(|(_, s)| **s)
    {
        mark.execute([name]).map_err(DbError::Sql)?;
    }
    Ok(ids)
}

/// The metric and gap columns that have a value in at least one stored run.
pub fn metrics_seen(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached("SELECT name FROM metrics_seen")?;
    let names = stmt.query_map([], |r| r.get(0))?;
    names.collect()
}

/// Removes the runs that arrived before `cutoff_unix_ms` (the collector's clock, never
/// the client's); how many went. Runs still queued for export go from the outbox too,
/// counted as dropped (never silently).
pub fn remove_before(conn: &mut Connection, cutoff_unix_ms: f64) -> Result<usize, DbError> {
    let tx = conn.transaction().map_err(DbError::Sql)?;
    let n = tx
        .execute(
            &format!("DELETE FROM runs WHERE {ARRIVAL} < ?1"),
            [cutoff_unix_ms],
        )
        .map_err(DbError::Sql)?;
    crate::outbox::forget_removed(&tx).map_err(DbError::Sql)?;
    tx.commit().map_err(DbError::Sql)?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_per_request_metric_has_its_column() {
        let dir = tempfile::tempdir().unwrap();
        let conn = open(&dir.path().join("t.db"), true).unwrap();
        let mut stmt = conn.prepare("PRAGMA table_info(runs)").unwrap();
        let columns: Vec<String> = stmt
            .query_map([], |r| r.get(1))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for name in ttfx_core::metrics::SCALAR_NAMES {
            assert!(
                METRIC_COLUMNS.contains(&name) && columns.iter().any(|c| c == name),
                "metric `{name}` has no column: add a migration"
            );
        }
        for d in DIMENSIONS {
            assert!(columns.iter().any(|c| c == d.name), "{}", d.name);
        }
    }

    #[test]
    fn a_database_is_migrated_once_and_marked_as_ttfx() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        drop(open(&path, true).unwrap());
        // Again: nothing left to migrate, nothing refused.
        let conn = open(&path, false).unwrap();
        let id: i32 = conn
            .query_row("PRAGMA application_id", [], |r| r.get(0))
            .unwrap();
        let version: i32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!((id, version), (APPLICATION_ID, SCHEMA_VERSION));
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let missing = open(&dir.path().join("none.db"), false).unwrap_err();
        assert!(
            missing.to_string().ends_with("none.db: no such file"),
            "{missing}"
        );
    }

    /// A collector's file from before voice turns keeps its rows and gains the turn's
    /// columns, empty for those rows.
    #[test]
    fn a_version_1_database_is_migrated_to_the_turn_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut conn = Connection::open(&path).unwrap();
        migrate(&mut conn, MIGRATION_1, 1).unwrap();
        conn.execute(
            "INSERT INTO runs (at_unix_ms, received_unix_ms, source, outcome, hidden, \
             sample_rate, ttft_ms, report) VALUES (1, 1, 'field', 'completed', 0, 1, 412.5, '{}')",
            [],
        )
        .unwrap();
        drop(conn);
        let conn = open(&path, false).unwrap();
        let version: i32 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let (ttft, v2v): (f64, Option<f64>) = conn
            .query_row("SELECT ttft_ms, voice_to_voice_ms FROM runs", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((ttft, v2v), (412.5, None));
    }

    /// Retention counts from the arrival: a run whose client clock says 1970 but that
    /// arrived now stays; one that arrived 40 days ago goes, whatever its clock says.
    #[test]
    fn retention_counts_from_arrival_not_the_clients_clock() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("t.db"), true).unwrap();
        let now = 1.8e12;
        let day = 86_400_000.0;
        let insert = |at: f64, received: f64, label: &str| {
            conn.execute(
                "INSERT INTO runs (at_unix_ms, received_unix_ms, source, outcome, hidden, \
                 sample_rate, label, report) VALUES (?1, ?2, 'field', 'completed', 0, 1, ?3, '{}')",
                rusqlite::params![at, received, label],
            )
            .unwrap();
        };
        insert(1.0, now, "clock-in-1970-arrived-now");
        insert(now - 40.0 * day, now - 40.0 * day, "arrived-40-days-ago");
        insert(now, now - 40.0 * day, "clock-now-arrived-40-days-ago");
        assert_eq!(remove_before(&mut conn, now - 30.0 * day).unwrap(), 2);
        let kept: String = conn
            .query_row("SELECT label FROM runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, "clock-in-1970-arrived-now");
        // The removal walks the arrival's index, not the whole table.
        let plan: String = conn
            .query_row(
                &format!("EXPLAIN QUERY PLAN DELETE FROM runs WHERE {ARRIVAL} < 1"),
                [],
                |r| r.get(3),
            )
            .unwrap();
        assert!(plan.contains("runs_received"), "{plan}");
    }

    /// A version-4 file (before #31) keeps its rows and gains the arrival's index (and the
    /// queries' narrow one); every
    /// writing connection commits with `synchronous = FULL`.
    #[test]
    fn a_version_4_database_gains_the_arrival_index_and_commits_are_full() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut conn = Connection::open(&path).unwrap();
        for (i, sql) in MIGRATIONS[..4].iter().enumerate() {
            migrate(&mut conn, sql, i as i32 + 1).unwrap();
        }
        conn.execute(
            "INSERT INTO runs (at_unix_ms, received_unix_ms, source, outcome, hidden, \
             sample_rate, report) VALUES (1, 2, 'field', 'completed', 0, 1, '{}')",
            [],
        )
        .unwrap();
        drop(conn);
        let conn = open(&path, false).unwrap();
        let indexes: Vec<String> = conn
            .prepare("SELECT name FROM pragma_index_list('runs') ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            indexes,
            ["runs_at", "runs_gaps", "runs_narrow", "runs_received"]
        );
        let rows: i64 = conn
            .query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1);
        let synchronous: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(synchronous, 2, "FULL");
    }

    /// A version-7 file's runs gain their gaps as columns, read once from each stored
    /// report (a report without gaps leaves them empty); the migration's columns are
    /// exactly one per milestone.
    #[test]
    fn a_version_7_database_gains_the_gap_columns_from_its_reports() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let mut conn = Connection::open(&path).unwrap();
        for (i, sql) in MIGRATIONS[..7].iter().enumerate() {
            migrate(&mut conn, sql, i as i32 + 1).unwrap();
        }
        let with_gaps = r#"{"run":{"gaps":{"headers":4.5,"first_token":-12.25,"done":0}}}"#;
        for report in [with_gaps, "{}"] {
            conn.execute(
                "INSERT INTO runs (at_unix_ms, received_unix_ms, source, outcome, hidden, \
                 sample_rate, report) VALUES (1, 2, 'field', 'completed', 0, 1, ?1)",
                [report],
            )
            .unwrap();
        }
        drop(conn);
        let conn = open(&path, false).unwrap();
        let columns: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info('runs') WHERE name LIKE 'gap_%'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        // In the table's order: migration 9 added the later milestones' columns last.
        let mut want: Vec<String> = ttfx_core::Milestone::ALL
            .into_iter()
            .map(gap_column)
            .collect();
        let mut columns = columns;
        columns.sort();
        want.sort();
        assert_eq!(columns, want);
        let read = |sql: &str| -> Vec<Option<f64>> {
            conn.prepare(sql)
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert_eq!(
            read("SELECT gap_headers_ms FROM runs ORDER BY id"),
            [Some(4.5), None]
        );
        assert_eq!(
            read("SELECT gap_first_token_ms FROM runs ORDER BY id"),
            [Some(-12.25), None]
        );
        assert_eq!(
            read("SELECT gap_done_ms FROM runs ORDER BY id"),
            [Some(0.0), None]
        );
        assert_eq!(
            read("SELECT gap_first_byte_ms FROM runs ORDER BY id"),
            [None, None]
        );
    }

    /// An insert fills each gap column with the report's gap, as the migration's
    /// `json_extract` of the stored report reads it.
    #[test]
    fn an_insert_fills_the_gap_columns_as_the_report_has_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = open(&dir.path().join("t.db"), true).unwrap();
        let mut report: FieldReport = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "kind": "field", "generator": "test",
            "run": {"outcome": "completed", "hidden": false, "sample_rate": 1.0,
                    "milestones": {"request_start": 0.0}, "chunks": {"count": 0,
                    "bytes": 0, "visible_tokens": 0, "reasoning_tokens": 0}}
        }))
        .unwrap();
        for (i, m) in ttfx_core::Milestone::ALL.iter().enumerate() {
            report
                .run
                .gaps
                .0
                .push((m.as_str().to_owned(), i as f64 * 1.5 - 7.0));
        }
        let row = Row {
            report,
            source: Source::Field,
            received_unix_ms: 1.8e12,
        };
        insert(&mut conn, &[row]).unwrap();
        for (i, m) in ttfx_core::Milestone::ALL.into_iter().enumerate() {
            let (column, extracted): (f64, f64) = conn
                .query_row(
                    &format!(
                        "SELECT {}, json_extract(report, '$.run.gaps.{}') FROM runs",
                        gap_column(m),
                        m.as_str()
                    ),
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .unwrap();
            assert_eq!((column, extracted), (i as f64 * 1.5 - 7.0, column), "{m:?}");
        }
    }

    /// The file's bytes, to show a refused open changed nothing.
    fn bytes(path: &Path) -> Vec<u8> {
        std::fs::read(path).unwrap()
    }

    #[test]
    fn a_negative_or_zero_version_on_a_ttfx_file_is_refused_not_skipped() {
        for bad in [-1, i32::MIN, 0] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.db");
            let conn = open(&path, true).unwrap();
            conn.pragma_update(None, "user_version", bad).unwrap();
            conn.pragma_update(None, "journal_mode", "DELETE").unwrap();
            drop(conn);
            let before = bytes(&path);
            for e in [open(&path, false), open_read_only(&path)] {
                let e = e.unwrap_err().to_string();
                assert!(
                    e.contains(&format!("schema version {bad} is not one")),
                    "{e}"
                );
            }
            assert_eq!(bytes(&path), before, "a refused open wrote to the file");
        }
    }

    #[test]
    fn reading_never_migrates_or_writes_and_an_older_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        // A version-1 ttfx file, as the first collector wrote it.
        let mut conn = Connection::open(&path).unwrap();
        migrate(&mut conn, MIGRATION_1, 1).unwrap();
        drop(conn);
        let before = bytes(&path);
        let e = open_read_only(&path).unwrap_err().to_string();
        assert!(
            e.contains("schema version 1 is older") && e.contains("never migrates"),
            "{e}"
        );
        assert_eq!(bytes(&path), before);
        // At the current version it opens, and SQLite itself refuses a write through it.
        drop(open(&path, false).unwrap());
        let conn = open_read_only(&path).unwrap();
        let write = conn
            .execute("DELETE FROM runs", [])
            .unwrap_err()
            .to_string();
        assert!(write.contains("readonly"), "{write}");
    }

    #[test]
    fn reading_a_foreign_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE accounts (id INTEGER); PRAGMA user_version = 4;")
            .unwrap();
        drop(conn);
        let e = open_read_only(&path).unwrap_err().to_string();
        assert!(
            e.contains("not a ttfx database") && e.contains("accounts"),
            "{e}"
        );
    }

    #[test]
    fn a_newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let conn = open(&path, true).unwrap();
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        drop(conn);
        let e = open(&path, false).unwrap_err().to_string();
        assert!(e.contains("newer than this ttfx"), "{e}");
    }
}
