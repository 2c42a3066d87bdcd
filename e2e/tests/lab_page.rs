//! The lab page, served by `ttfx serve`, rendered by the wasm app in headless Chromium.

use std::time::Duration;

use fantoccini::Locator;
use ttfx_e2e::{Chromedriver, ServeProcess, paths};

#[tokio::test]
async fn lab_page_renders_in_headless_chromium() -> anyhow::Result<()> {
    let dist = paths::lab_dist()?;
    let dist = dist.to_str().unwrap_or_default();
    let server = ServeProcess::start(&paths::ttfx_bin()?, &["--dist", dist])?;
    let driver = Chromedriver::start()?;
    let client = driver.session().await?;

    client.goto(&server.url).await?;
    // The heading and the probe line exist only once the wasm app has mounted:
    // index.html itself carries neither.
    let status = client
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::Css("#probe-status"))
        .await?
        .text()
        .await?;
    let title = client.find(Locator::Css("h1")).await?.text().await?;
    client.close().await?;

    assert_eq!(title, "ttfx lab");
    // "probe 0.1.0 · clock 123.4 ms": the probe read the page's performance.now().
    let clock: f64 = status
        .split("clock ")
        .nth(1)
        .and_then(|s| s.strip_suffix(" ms"))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("no clock reading in {status:?}"))?;
    assert!(
        status.starts_with(&format!("probe {}", env!("CARGO_PKG_VERSION"))),
        "{status}"
    );
    assert!(clock > 0.0, "{status}");
    Ok(())
}
