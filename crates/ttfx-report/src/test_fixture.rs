//! A real batch for the renderers' tests: the three runs of the golden `ttfx run --json`
//! batch (`crates/ttfx/tests/golden/inputs/batch_report.run_json.json`, replayed from a
//! page's recorded probe calls), each joined with a server record as `ttfx run` joins
//! the simulator's, so the gaps are there; and budgets judged on it.

// Test code: a failed step is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use ttfx_core::Milestone;
use ttfx_core::report::{BatchReport, ReportFile, Run};
use ttfx_core::server_timing::{ServerTiming, TimingSource};
use ttfx_core::timeline::ServerData;

use crate::budget::{RunBudget, Verdict};

const GOLDEN_BATCH: &str =
    include_str!("../../ttfx/tests/golden/inputs/batch_report.run_json.json");

/// The server's times: its first byte 30 ms and its first token 40 ms before the
/// client's (the network and the page's own work), as the proxy's record names them.
pub(crate) fn server_of(run: &Run) -> ServerData {
    let at = |m| run.timeline.milestones.get(m).unwrap();
    let timing = |name: &str, ms: f64| ServerTiming {
        name: name.to_owned(),
        duration_ms: Some(ms),
        description: None,
        source: TimingSource::VantageProxy,
    };
    ServerData {
        timings: vec![
            timing("first_byte", at(Milestone::FirstByte) - 30.0),
            timing("first_token", at(Milestone::FirstToken) - 40.0),
        ],
        ..ServerData::default()
    }
}

/// The golden batch's runs, each with its server record joined.
pub(crate) fn runs() -> Vec<Run> {
    ReportFile::from_json(GOLDEN_BATCH)
        .unwrap()
        .into_runs()
        .into_iter()
        .map(|r| {
            let server = server_of(&r);
            let mut r = r.with_server(&server).unwrap();
            r.target = Some("sim/default".to_owned());
            r
        })
        .collect()
}

/// One budget that passes (p90 of ttft_visible is about 990 ms) and one that fails.
pub(crate) const BUDGETS: [&str; 2] = ["ttft_visible.p90<=3s", "ttft_visible.p50<=100ms"];

pub(crate) fn batch() -> BatchReport {
    BatchReport::from_runs(runs(), &[])
}

pub(crate) fn verdicts(batch: &BatchReport) -> Vec<Verdict> {
    BUDGETS
        .iter()
        .map(|b| RunBudget::parse(b).unwrap().judge(&batch.statistics))
        .collect()
}
