//! Priming: a synthetic run, a step per call, for the main-thread fallback right after
//! the module loads (warm_up.rs warms the Worker in one go, which on the main thread
//! would be one long task). Chromium compiles each wasm function on its first call, on
//! the calling thread: a page's first run paid that inside its calls (its first `chunks`
//! 3–4.6 ms in e2e bundler.rs; 1.7 ms in Node, 0.1 ms with `--no-wasm-lazy-compilation`).
//! Run in idle slices, these steps compile the common path (an OpenAI-style SSE reply)
//! piece by piece before the page's first run needs it.
//!
//! A step's cost is the code it compiles first, about 50 µs a KB of wasm in V8's
//! baseline compiler (Node's `--trace-wasm-compilation-times`), several times that on a
//! busy machine. Five steps compiled up to 33 KB each: 1.7 ms idle, 5.3–8.1 ms beside a
//! build (#35's 4 ms slice). So the largest functions (the frame JSON, the timeline's
//! check, the metrics, the JSON writer's numbers) each get a step of their own ahead of
//! the step that would reach them, and no step compiles more than 14 KB. A step that
//! only compiles keeps its result with `black_box` (`compile`): an unused pure result could
//! otherwise be optimized away with the call.

use ttfx_core::Timeline;
use ttfx_core::decode::{SseEvent, auto, json};
use ttfx_core::metrics::{RequestMetrics, audio, network, turn};

use wasm_bindgen::prelude::*;

use crate::{Analysis, AnalysisError, Runs, js, report_json};

/// The synthetic run's key: the front numbers runs from 1 up (run.js).
const RUN: u32 = u32::MAX;

/// One event split in two: the first piece compiles the SSE line scanner alone, the
/// second the dialect's delta and the recorder's token path.
const HEAD: &[u8] = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
const TAIL: &[u8] = b"Hi\"}}]}\n\ndata: [DONE]\n\n";
/// The event's JSON, parsed alone, then read for its dialect, in the two steps before
/// TAIL, so the parser and the dialect sniffing each compile apart.
const FRAME: &str = "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}";

/// How many steps [`Runs::prime`] has.
pub(crate) const STEPS: u32 = 12;

impl Runs {
    /// Step `step` (0 to [`STEPS`] − 1) of the synthetic run; a later step does nothing.
    /// The run leaves nothing behind once its last step ran. Whether a step follows.
    pub fn prime(&mut self, step: u32) -> Result<bool, AnalysisError> {
        match step {
            0 => {
                self.begin_page(RUN, None, None, None, None)?;
                self.request(RUN, Some("POST".into()), None, Some(0.0), None)?;
            }
            1 => self.headers(RUN, 1.0, 200, Some("text/event-stream"), None)?,
            2 => self.chunks(RUN, &[2.0, HEAD.len() as f64], HEAD)?,
            3 => compile(json::parse(FRAME)),
            4 => compile(auto::dialect_of_sse(&SseEvent {
                event_type: "message".into(),
                data: FRAME.into(),
                last_event_id: String::new(),
            })),
            5 => {
                self.chunks(RUN, &[3.0, TAIL.len() as f64], TAIL)?;
                self.end(RUN, 4.0)?;
            }
            // Only compiled here: an empty timeline is refused, which is no matter.
            6 => compile(Timeline::default().validate()),
            // Some of the metrics' parts, then the rest with their whole.
            7 => {
                let empty = Timeline::default();
                compile(audio::arrival_rate(&empty));
                compile(audio::notes(&empty));
                compile(network::notes(&empty));
                compile(turn::notes(turn::breakdown(&empty).as_ref()));
                compile(ttfx_core::gap::gaps(&empty));
                compile(ttfx_core::stall::stalls(&[1.0, 2.0]));
            }
            8 => compile(RequestMetrics::compute(&Timeline::default())),
            9 => self.finish_begin(RUN, None, None)?,
            // The writer's strings and numbers, ahead of the report's many small writes.
            10 => compile(report_json::to_string(&("\"\n", 1.5_f64, 2_u64, -3_i64))),
            11 => {
                self.finish_write(RUN)?;
            }
            _ => return Ok(false),
        }
        Ok(step + 1 < STEPS)
    }
}

/// Keeps a call made only to compile it: LLVM may drop a pure call whose result
/// is unused.
fn compile<T>(result: T) {
    drop(std::hint::black_box(result));
}

#[wasm_bindgen]
impl Analysis {
    /// Step `step` of a synthetic run that compiles the common path in pieces (see the
    /// module's doc); the front calls steps from 0 up, in idle time, while the last one
    /// returned `true`. `_run` is the front's key for the call, unused: the run has its
    /// own.
    #[wasm_bindgen(js_name = primeStep)]
    pub fn prime_step(&mut self, _run: u32, step: u32) -> Result<bool, JsError> {
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
            assert!(runs.prime(step).unwrap(), "step {step} has a next");
        }
        // The last step's report, written here to look at it.
        let report = runs.finish_write(RUN).unwrap();
        assert!(report.contains("\"openai-chat\""), "{report}");
        assert!(report.contains("\"completed\""), "{report}");
        assert_eq!(runs.in_progress(), 0);
        assert!(runs.ended.is_empty());
        // Run through again, every step: nothing is left, a step past the end is a no-op.
        for step in 0..=STEPS {
            assert_eq!(runs.prime(step).unwrap(), step + 1 < STEPS);
        }
        assert_eq!(runs.in_progress(), 0);
        assert!(runs.ended.is_empty());
    }
}
