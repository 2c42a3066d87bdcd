//! The probe's clock, read in a real browser.
#![cfg(target_arch = "wasm32")]
// clippy does not see `#[wasm_bindgen_test]` functions as tests; a failed unwrap here is
// a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use gloo_timers::future::TimeoutFuture;
use ttfx_probe::clock::now_ms;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn page_now() -> f64 {
    web_sys::window().unwrap().performance().unwrap().now()
}

#[wasm_bindgen_test]
fn probe_clock_is_the_page_clock() {
    // Read the page's own clock on both sides of the probe's reading: the probe must
    // land between them, which only holds if it reads the same `performance.now()`.
    let before = page_now();
    let probe = now_ms().unwrap();
    let after = page_now();
    assert!(
        before <= probe && probe <= after,
        "{before} <= {probe} <= {after}"
    );
}

#[wasm_bindgen_test]
async fn probe_clock_follows_real_time() {
    let start = now_ms().unwrap();
    TimeoutFuture::new(30).await;
    let elapsed = now_ms().unwrap() - start;
    // setTimeout never fires early by more than the clock's own step (0.1 ms when not
    // cross-origin isolated, plus 1 ms of timer clamping in some engines), and a loaded
    // two-core machine can delay it but not by seconds.
    assert!(elapsed >= 29.0, "30 ms timeout measured as {elapsed} ms");
    assert!(elapsed < 5_000.0, "30 ms timeout measured as {elapsed} ms");
}
