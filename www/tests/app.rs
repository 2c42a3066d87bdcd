//! The lab page's components, mounted in a real browser.
#![cfg(target_arch = "wasm32")]
// clippy does not see `#[wasm_bindgen_test]` functions as tests; a failed unwrap here is
// a failed test, which is what it should be.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use wasm_bindgen::JsCast;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
fn app_renders_title_and_probe_status() {
    let document = web_sys::window().unwrap().document().unwrap();
    let host = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&host).unwrap();
    let host: web_sys::HtmlElement = host.unchecked_into();

    let _handle = leptos::mount::mount_to(host.clone(), ttfx_lab::App);

    let title = host
        .query_selector("h1")
        .unwrap()
        .unwrap()
        .text_content()
        .unwrap();
    assert_eq!(title, "ttfx lab");
    let status = host
        .query_selector("#probe-status")
        .unwrap()
        .unwrap()
        .text_content()
        .unwrap();
    assert!(
        status.starts_with(&format!("probe {}", ttfx_probe::VERSION)),
        "{status}"
    );
    assert!(status.contains(" ms"), "{status}");
}

/// Waits for Leptos to apply pending updates (they run on a later task).
async fn tick() {
    gloo_timers::future::TimeoutFuture::new(20).await;
}

#[wasm_bindgen_test]
async fn a_bad_count_is_a_message_and_nothing_runs() {
    let document = web_sys::window().unwrap().document().unwrap();
    let host = document.create_element("div").unwrap();
    document.body().unwrap().append_child(&host).unwrap();
    let host: web_sys::HtmlElement = host.unchecked_into();
    let _handle = leptos::mount::mount_to(host.clone(), ttfx_lab::App);

    let empty = host.query_selector(".batch .empty").unwrap().unwrap();
    assert!(empty.text_content().unwrap().starts_with("No runs yet"));

    let runs: web_sys::HtmlInputElement = host
        .query_selector("#runs")
        .unwrap()
        .unwrap()
        .unchecked_into();
    runs.set_value("0");
    runs.dispatch_event(&web_sys::Event::new("input").unwrap())
        .unwrap();
    let button: web_sys::HtmlElement = host
        .query_selector("#run")
        .unwrap()
        .unwrap()
        .unchecked_into();
    button.click();
    tick().await;

    let error = host
        .query_selector("#form-error")
        .unwrap()
        .expect("the form names the problem");
    assert_eq!(
        error.text_content().unwrap(),
        "runs must be a whole number from 1 to 500, got \"0\""
    );
    assert!(host.query_selector(".exchange").unwrap().is_none());
}
