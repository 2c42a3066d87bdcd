//! The `webdriver.json` files `wasm-bindgen-test-runner` reads beside each wasm test crate
//! (it looks in the crate's folder, where `cargo test` runs it). They are written from
//! `ttfx-webdriver`'s one Chromium flag list, not kept as copies: `cargo xtask setup`
//! and the wasm test stage write them, and git ignores them.

use anyhow::Context;

use crate::paths;

/// The crates with wasm tests (those that dev-depend on `wasm-bindgen-test`).
pub const WASM_TEST_CRATES: &[&str] = &["crates/ttfx-probe", "www"];

/// Writes each crate's `webdriver.json` unless it already holds the same text.
pub fn write() -> anyhow::Result<()> {
    let text = ttfx_webdriver::wasm_test_webdriver_json();
    for krate in WASM_TEST_CRATES {
        let path = paths::root().join(krate).join("webdriver.json");
        if std::fs::read_to_string(&path).is_ok_and(|old| old == text) {
            continue;
        }
        std::fs::write(&path, &text).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("xtask: wrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new wasm test crate without a generated `webdriver.json` would run Chromium with
    /// no flags (and fail as root without `--no-sandbox`).
    #[test]
    fn every_crate_with_wasm_tests_gets_a_webdriver_json() {
        let root = paths::root();
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
        let members = manifest
            .split("members = [")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .unwrap();
        let mut with_wasm_tests: Vec<String> = members
            .split(',')
            .map(|m| m.trim().trim_matches('"').to_owned())
            .filter(|m| !m.is_empty())
            .filter(|m| {
                std::fs::read_to_string(root.join(m).join("Cargo.toml"))
                    .unwrap()
                    .lines()
                    .any(|l| l.trim_start().starts_with("wasm-bindgen-test"))
            })
            .collect();
        with_wasm_tests.sort();
        let mut listed: Vec<&str> = WASM_TEST_CRATES.to_vec();
        listed.sort_unstable();
        assert_eq!(with_wasm_tests, listed);
    }

    /// The files hold the generated text (writing them is what setup does anyway).
    #[test]
    fn the_written_files_hold_the_one_list() {
        write().unwrap();
        for krate in WASM_TEST_CRATES {
            let path = paths::root().join(krate).join("webdriver.json");
            let json: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            assert_eq!(
                json["goog:chromeOptions"]["args"],
                serde_json::json!(ttfx_webdriver::CHROMIUM_ARGS),
                "{}",
                path.display()
            );
        }
    }

    /// Written files are ignored by git, so no stale copy can be committed.
    #[test]
    fn the_written_files_are_ignored_by_git() {
        let ignore = std::fs::read_to_string(paths::root().join(".gitignore")).unwrap();
        for krate in WASM_TEST_CRATES {
            let line = format!("/{krate}/webdriver.json");
            assert!(ignore.lines().any(|l| l.trim() == line), "{line}");
        }
    }
}
