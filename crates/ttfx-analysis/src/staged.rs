//! `finish` in two steps, for the main-thread fallback (the front's analysis_host.js):
//! ending the run (the recorder's end, the page's observations, the metrics) and writing
//! its JSON are each a few ms on a cold page, so each is its own call and the front
//! yields to the page between them. The Worker and native callers keep one `finish`,
//! which is these two steps back to back.

use ttfx_core::field::FieldContext;
use ttfx_core::report::RunReport;
use wasm_bindgen::prelude::*;

use crate::{Analysis, AnalysisError, Runs, js, write_finished};

/// A run ended by [`Runs::finish_begin`]: its report, metrics computed, not yet JSON.
pub(crate) struct Ended {
    report: RunReport,
    field: Option<FieldContext>,
}

impl Runs {
    /// Ends the run (see [`Runs::finish`]) and keeps its report for
    /// [`Runs::finish_write`]. `sample_rate` and `page_path` as [`Runs::finish_page`]'s.
    /// The run is no longer in progress either way.
    pub fn finish_begin(
        &mut self,
        run: u32,
        page_path: Option<String>,
        sample_rate: Option<f64>,
    ) -> Result<(), AnalysisError> {
        if let Some(sample_rate) = sample_rate {
            self.page(run)?.field = Some(FieldContext {
                page_path,
                sample_rate,
            });
        }
        let (report, field) = self.end_run(run)?;
        // A run begun again and ended twice without a write keeps only its last report.
        self.ended.retain(|(key, _)| *key != run);
        self.ended.push((run, Ended { report, field }));
        Ok(())
    }

    /// The JSON of a run [`Runs::finish_begin`] ended: the report, and after a newline
    /// the field report when the page asked for one. The report is forgotten either way.
    pub fn finish_write(&mut self, run: u32) -> Result<String, AnalysisError> {
        let index = self
            .ended
            .iter()
            .position(|(key, _)| *key == run)
            .ok_or(AnalysisError::NotEnded(run))?;
        let (_, Ended { report, field }) = self.ended.swap_remove(index);
        let finished = write_finished(&report, field.as_ref())?;
        let mut text = finished.report;
        if let Some(field) = finished.field {
            text.push('\n');
            text.push_str(&field);
        }
        Ok(text)
    }
}

#[wasm_bindgen]
impl Analysis {
    /// [`Analysis::finish`]'s first step: ends the run and computes its metrics; the
    /// report is written by [`Analysis::finish_write`].
    #[wasm_bindgen(js_name = finishBegin)]
    pub fn finish_begin(
        &mut self,
        run: u32,
        page_path: Option<String>,
        sample_rate: Option<f64>,
    ) -> Result<(), JsError> {
        self.runs
            .finish_begin(run, page_path, sample_rate)
            .map_err(js)
    }

    /// [`Analysis::finish`]'s second step: the JSON text `finish` returns.
    #[wasm_bindgen(js_name = finishWrite)]
    pub fn finish_write(&mut self, run: u32) -> Result<String, JsError> {
        self.runs.finish_write(run).map_err(js)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended_run(runs: &mut Runs, run: u32) {
        runs.begin_page(run, None, Some("id".into()), Some("label".into()), None)
            .unwrap();
        runs.recorder(run)
            .unwrap()
            .headers(30.0, 200, Some("text/event-stream"), &[]);
        let chunk = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n";
        runs.chunks(run, &[80.0, chunk.len() as f64], chunk.as_bytes())
            .unwrap();
        runs.recorder(run).unwrap().end(100.0);
    }

    #[test]
    fn the_two_steps_write_what_one_finish_writes() {
        let (mut one, mut two) = (Runs::default(), Runs::default());
        ended_run(&mut one, 3);
        ended_run(&mut two, 3);
        let whole = one.finish_page(3, Some("/chat".into()), Some(0.5)).unwrap();
        two.finish_begin(3, Some("/chat".into()), Some(0.5))
            .unwrap();
        assert!(!two.has(3), "the first step ends the run");
        let staged = two.finish_write(3).unwrap();
        assert_eq!(staged, whole);
        assert!(staged.contains('\n'), "the field report follows: {staged}");
    }

    #[test]
    fn writing_a_run_not_ended_is_an_error_not_a_panic() {
        let mut runs = Runs::default();
        ended_run(&mut runs, 5);
        let error = runs.finish_write(5).unwrap_err().to_string();
        assert!(error.contains("finishBegin"), "{error}");
        runs.finish_begin(5, None, None).unwrap();
        runs.finish_write(5).unwrap();
        assert!(runs.finish_write(5).is_err(), "a report is written once");
        assert!(runs.finish_begin(9, None, None).is_err());
    }
}
