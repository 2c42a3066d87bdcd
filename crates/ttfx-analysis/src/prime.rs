//! Priming: a synthetic run, a step per call, for the main-thread fallback right after
//! the module loads (warm_up.rs warms the Worker in one go, which on the main thread
//! would be one long task). Chromium compiles each wasm function on its first call, on
//! the calling thread: a page's first run paid that inside its calls (its first `chunks`
//! 3–4.6 ms in e2e bundler.rs; 1.7 ms in Node, 0.1 ms with `--no-wasm-lazy-compilation`).
//! Run in idle slices, these steps compile the common path (an OpenAI-style SSE reply)
//! piece by piece, each under the front's 4 ms slice, before the page's first run needs
//! it.

use wasm_bindgen::prelude::*;

use crate::{Analysis, AnalysisError, Runs, js};

/// The synthetic run's key: the front numbers runs from 1 up (run.js).
const RUN: u32 = u32::MAX;

/// One event split in two: the first piece compiles the SSE line scanner alone, the
/// second the frame JSON, the dialect's delta and the recorder's token path.
const HEAD: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
const TAIL: &[u8] = b"Hi\"}}]}\n\ndata: [DONE]\n\n";

/// How many steps [`Runs::prime`] has (the front calls that many: analysis_host.js).
#[cfg(test)]
const STEPS: u32 = 5;

impl Runs {
    /// Step `step` (0 to 4) of the synthetic run; a later step does nothing.
    /// The run leaves nothing behind once its last step ran.
    pub fn prime(&mut self, step: u32) -> Result<(), AnalysisError> {
        match step {
            0 => {
                self.begin_page(RUN, None, None, None, None)?;
                self.request(RUN, Some("POST".into()), None, Some(0.0), None)?;
                self.headers(RUN, 1.0, 200, Some("text/event-stream"), None)
            }
            1 => self.chunks(RUN, &[2.0, HEAD.len() as f64], HEAD),
            2 => {
                self.chunks(RUN, &[3.0, TAIL.len() as f64], TAIL)?;
                self.end(RUN, 4.0)
            }
            3 => self.finish_begin(RUN, None, None),
            4 => self.finish_write(RUN).map(drop),
            _ => Ok(()),
        }
    }
}

#[wasm_bindgen]
impl Analysis {
    /// Step `step` of a synthetic run that compiles the common path in pieces (see the
    /// module's doc); the front calls steps 0 to 4 in order, in idle time.
    /// `_run` is the front's key for the call, unused: the run has its own.
    #[wasm_bindgen(js_name = primeStep)]
    pub fn prime_step(&mut self, _run: u32, step: u32) -> Result<(), JsError> {
        self.runs.prime(step).map_err(js)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_synthetic_run_decodes_its_event_and_leaves_nothing_behind() {
        let mut runs = Runs::default();
        for step in 0..STEPS - 1 {
            runs.prime(step).unwrap();
        }
        // The last step's report, written here to look at it.
        let report = runs.finish_write(RUN).unwrap();
        assert!(report.contains("\"openai-chat\""), "{report}");
        assert!(report.contains("\"completed\""), "{report}");
        assert_eq!(runs.in_progress(), 0);
        assert!(runs.ended.is_empty());
        // Run through again, every step: nothing is left, a step past the end is a no-op.
        for step in 0..=STEPS {
            runs.prime(step).unwrap();
        }
        assert_eq!(runs.in_progress(), 0);
        assert!(runs.ended.is_empty());
    }
}
