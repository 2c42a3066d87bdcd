//! The probe as a frontend team ships it: the tarball `npm pack` wrote is installed into
//! a Vite app (e2e/vite-app), the app is built by Vite (pinned by `cargo xtask setup`),
//! served by `ttfx serve` and measures a stream in headless Chromium. The bundler, not
//! the probe's own folder layout, resolves the package's entry, its JS glue and its wasm.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;
use ttfx_e2e::site::copy_dir;
use ttfx_e2e::{Chromedriver, ServeProcess, paths};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn run(command: &mut Command, what: &str) -> anyhow::Result<()> {
    let out = command.output()?;
    anyhow::ensure!(out.status.success(), "{what} failed:\n{}", text(&out));
    Ok(())
}

/// The app folder with the packed probe installed and Vite's build in `dist/`.
fn build_app(dir: &Path) -> anyhow::Result<()> {
    copy_dir(&paths::workspace_root().join("e2e/vite-app"), dir)?;
    std::fs::write(
        dir.join("package.json"),
        r#"{ "name": "vite-app", "private": true, "type": "module" }"#,
    )?;
    // Offline: the tarball has no dependencies, so npm needs no registry.
    run(
        Command::new("npm")
            .args([
                "install",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--silent",
            ])
            .arg(paths::probe_tarball()?)
            .current_dir(dir),
        "npm install of the packed probe",
    )?;
    run(
        Command::new("node")
            .arg(paths::vite()?)
            .args(["build", "--logLevel", "warn"])
            .current_dir(dir),
        "vite build",
    )
}

#[tokio::test]
async fn a_vite_app_bundles_the_packed_probe_and_measures_a_stream() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("ttfx-vite-app-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    build_app(&dir)?;
    let dist = dir.join("dist");
    let server = ServeProcess::start(&paths::ttfx_bin()?, &["--dist", &dist.to_string_lossy()])?;
    let driver = Chromedriver::start()?;
    let client = driver.session().await?;
    let endpoint = "/sim/default/v1/chat/completions?ttft_ms=60&output_tokens=6&seed=4";
    client
        .goto(&format!("{}?{}", server.url, urlencode(endpoint)))
        .await?;
    let mut result = Value::Null;
    for _ in 0..200 {
        result = client
            .execute("return window.appResult || null", vec![])
            .await?;
        if !result.is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = client.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    assert!(result["error"].is_null(), "{result}");
    let run = &result["report"]["run"];
    assert_eq!(run["target"], "vite-app", "{result}");
    let milestones = &run["timeline"]["milestones"];
    let first_visible = milestones["first_visible_token"].as_f64().unwrap_or(0.0);
    // The simulator's first token is due 60 ms after the request arrives.
    assert!(first_visible >= 60.0, "{result}");
    assert!(milestones["first_dom"].is_number(), "{result}");
    assert_eq!(run["timeline"]["request"]["dialect"], "openai-chat");
    // The wasm came from the bundle's assets (renamed with a content hash), not from the
    // package's own folder.
    let wasm: Vec<&str> = result["wasm"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        wasm.iter()
            .any(|p| p.starts_with("/assets/") && p.contains("ttfx_probe_bg")),
        "{wasm:?}"
    );
    Ok(())
}

/// Percent-encodes a path with its query for the app's own query string.
fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
