//! Driving the harness page: open it, wait until the probe loaded, call its functions.

use std::time::Duration;

use anyhow::bail;
use fantoccini::{Client, Locator};
use serde_json::Value;

/// Opens `url` and waits until the harness reports `ready`.
pub async fn open_harness(client: &Client, url: &str) -> anyhow::Result<()> {
    client.goto(url).await?;
    client
        .wait()
        .at_most(Duration::from_secs(30))
        .for_element(Locator::XPath(
            "//p[@id='status' and starts-with(text(), 'ready')]",
        ))
        .await?;
    Ok(())
}

/// Calls `window.harness[function](arg)` and returns what its promise resolved to.
pub async fn call(client: &Client, function: &str, arg: Value) -> anyhow::Result<Value> {
    let script = format!(
        "const done = arguments[arguments.length - 1];
         window.harness.{function}(arguments[0]).then(done,
           (e) => done({{ harnessError: String((e && e.stack) || e) }}));"
    );
    let value = client.execute_async(&script, vec![arg]).await?;
    if let Some(error) = value.get("harnessError") {
        bail!("harness.{function} failed in the page: {error}");
    }
    Ok(value)
}
