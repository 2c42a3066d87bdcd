//! `--html FILE` and `--summary-md FILE`: the batches as ttfx-report's page and summary
//! (the same ones `ttfx report --html/--summary-md` writes from a `--json` batch), with
//! the budgets judged on the first target.

use std::path::Path;

use ttfx_core::report::BatchReport;
use ttfx_report::document::{Document, Section};
use ttfx_report::{html, summary_md};

use super::args::RunArgs;
use super::budget::Verdict;
use super::error::OutputError;
use super::sweep::Step;

const TITLE: &str = "ttfx run";

/// One section per target: the first judged by the budgets, `--against`'s beside it.
pub fn sections<'a>(
    batches: &'a [(String, BatchReport)],
    verdicts: &'a [Verdict],
) -> Vec<Section<'a>> {
    batches
        .iter()
        .enumerate()
        .map(|(i, (label, batch))| Section {
            heading: label,
            batch,
            verdicts: if i == 0 { verdicts } else { &[] },
        })
        .collect()
}

/// A sweep's headings: each target's label at each step's load level, per step.
pub fn step_headings(steps: &[Step]) -> Vec<Vec<String>> {
    steps
        .iter()
        .map(|s| {
            s.batches
                .iter()
                .map(|(label, _)| format!("{label} at {}", s.level.label()))
                .collect()
        })
        .collect()
}

/// A sweep: per step, a section per target, the first judged by that step's verdicts.
pub fn step_sections<'a>(
    steps: &'a [Step],
    verdicts: &'a [Vec<Verdict>],
    headings: &'a [Vec<String>],
) -> Vec<Section<'a>> {
    steps
        .iter()
        .zip(verdicts)
        .zip(headings)
        .flat_map(|((step, verdicts), headings)| {
            step.batches
                .iter()
                .zip(headings)
                .enumerate()
                .map(move |(i, ((_, batch), heading))| Section {
                    heading,
                    batch,
                    verdicts: if i == 0 { verdicts.as_slice() } else { &[] },
                })
        })
        .collect()
}

/// The page and the summary, each when asked for.
pub fn write(args: &RunArgs, sections: &[Section<'_>]) -> Result<(), OutputError> {
    let doc = Document {
        title: TITLE,
        sections,
    };
    if let Some(path) = &args.html {
        write_file(path, &html::render(&doc))?;
    }
    if let Some(path) = &args.summary_md {
        write_file(path, &summary_md::render(&doc))?;
    }
    Ok(())
}

fn write_file(path: &Path, text: &str) -> Result<(), OutputError> {
    std::fs::write(path, text).map_err(|cause| OutputError::Write {
        path: path.to_path_buf(),
        cause,
    })
}
