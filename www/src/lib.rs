//! The ttfx lab page. Components live here; `main.rs` only mounts.

use leptos::prelude::*;

/// The whole lab page.
#[component]
pub fn App() -> impl IntoView {
    view! {
        <main>
            <h1>"ttfx lab"</h1>
            <ProbeStatus/>
        </main>
    }
}

/// One line saying the probe is loaded and reading the page's clock.
#[component]
fn ProbeStatus() -> impl IntoView {
    let status = match ttfx_probe::clock::now_ms() {
        Ok(now) => format!("probe {} · clock {now:.1} ms", ttfx_probe::VERSION),
        Err(e) => format!("probe {} · {e}", ttfx_probe::VERSION),
    };
    view! { <p id="probe-status">{status}</p> }
}
