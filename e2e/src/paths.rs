//! Where the e2e tests find what `cargo xtask test` built for them.

use std::path::PathBuf;

use anyhow::{Context, bail};

/// The workspace root (the folder holding the root `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    // `cargo test` sets CARGO_MANIFEST_DIR when it runs a test binary: the manifest of
    // the package under test (e2e's, or ttfx's, whose tests use this crate too) in this
    // checkout. The compile-time one may name another checkout sharing the target folder
    // (a CI clone whose test binaries cargo then reuses for this tree). The root is the
    // nearest folder above it whose Cargo.toml is a workspace's, as cargo finds it.
    let here = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    here.ancestors()
        .find(|dir| {
            std::fs::read_to_string(dir.join("Cargo.toml"))
                .is_ok_and(|toml| toml.lines().any(|line| line.trim() == "[workspace]"))
        })
        .map(PathBuf::from)
        .unwrap_or(here)
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// The `ttfx` binary: `$TTFX_BIN`, else the debug build in the target folder.
pub fn ttfx_bin() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("TTFX_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("debug").join("ttfx"));
    if !path.is_file() {
        bail!(
            "no ttfx binary at {} (run `cargo xtask test`, which builds it)",
            path.display()
        );
    }
    Ok(path)
}

/// The built lab page: `$TTFX_DIST`, else Trunk's dist in the target folder.
pub fn lab_dist() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("TTFX_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("lab-dist"));
    if !path.join("index.html").is_file() {
        bail!(
            "no lab page at {} (run `cargo xtask test`, which builds it)",
            path.display()
        );
    }
    Ok(path)
}

/// The built probe package: `$TTFX_PROBE_PKG`, else `cargo xtask probe-pkg`'s output.
pub fn probe_pkg() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("TTFX_PROBE_PKG")
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("probe-pkg"));
    if !path.join("probe.js").is_file() {
        bail!(
            "no probe package at {} (run `cargo xtask test`, which builds it)",
            path.display()
        );
    }
    Ok(path)
}

/// An npm tool `cargo xtask setup` installed under `~/.cache/ttfx/NAME-VERSION/`: `$VAR`,
/// else the first such install; `entry` is its path inside the install.
fn npm_tool(var: &str, name: &str, entry: &str) -> anyhow::Result<PathBuf> {
    let path = std::env::var_os(var).map(PathBuf::from).or_else(|| {
        let home = PathBuf::from(std::env::var_os("HOME")?);
        let cache = home.join(".cache/ttfx");
        std::fs::read_dir(&cache)
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{name}-")))
            })
            .map(|p| p.join(entry))
    });
    match path {
        Some(path) if path.is_file() => Ok(path),
        _ => bail!("no {name} (run `cargo xtask test`, whose setup installs it)"),
    }
}

/// TypeScript's compiler (`bin/tsc`, run with node): `$TTFX_TSC`, else where `cargo xtask
/// setup` installs it.
pub fn tsc() -> anyhow::Result<PathBuf> {
    npm_tool("TTFX_TSC", "typescript", "node_modules/typescript/bin/tsc")
}

/// Vite's entry point (`bin/vite.js`, run with node): `$TTFX_VITE`, else where `cargo
/// xtask setup` installs it.
pub fn vite() -> anyhow::Result<PathBuf> {
    npm_tool("TTFX_VITE", "vite", "node_modules/vite/bin/vite.js")
}

/// The probe package as `npm pack` wrote it: `$TTFX_PROBE_TGZ`, else the one `cargo xtask
/// probe-pkg` writes in the target folder.
pub fn probe_tarball() -> anyhow::Result<PathBuf> {
    let path = std::env::var_os("TTFX_PROBE_TGZ")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            target_dir().join(format!("ttfx-probe-{}.tgz", env!("CARGO_PKG_VERSION")))
        });
    if !path.is_file() {
        bail!(
            "no packed probe at {} (run `cargo xtask test` or `cargo xtask probe-pkg`)",
            path.display()
        );
    }
    Ok(path)
}

/// The `node_modules` folder holding a React chat UI fixture's libraries (`fixture`: its
/// folder under e2e/chat-uis, `react-openai` or `react-ai-sdk`): `$TTFX_CHAT_UI_NODE_MODULES`
/// (react-openai) or `$TTFX_AI_SDK_CHAT_UI_NODE_MODULES` (react-ai-sdk), else the prefix
/// `cargo xtask setup` installs them into, named by the versions the fixture's
/// package.json pins (the same pins as setup's, which an xtask test checks).
pub fn chat_ui_node_modules(fixture: &str) -> anyhow::Result<PathBuf> {
    let var = match fixture {
        "react-openai" => "TTFX_CHAT_UI_NODE_MODULES",
        "react-ai-sdk" => "TTFX_AI_SDK_CHAT_UI_NODE_MODULES",
        other => bail!("e2e/chat-uis/{other} is not built with npm libraries"),
    };
    if let Some(path) = std::env::var_os(var) {
        return Ok(PathBuf::from(path));
    }
    let manifest = workspace_root()
        .join("e2e/chat-uis")
        .join(fixture)
        .join("package.json");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", manifest.display()))?;
    let manifest: serde_json::Value = serde_json::from_str(&text)?;
    let deps = manifest["dependencies"]
        .as_object()
        .with_context(|| format!("{fixture}/package.json has no dependencies"))?;
    let pin = |name: &str| deps.get(name).and_then(|v| v.as_str()).unwrap_or("?");
    // The prefix names of crates/xtask/src/paths.rs.
    let prefix = match fixture {
        "react-openai" => format!(
            "chat-ui-deps-react-{}-openai-{}",
            pin("react"),
            pin("openai")
        ),
        _ => format!(
            "chat-ui-deps-react-{}-ai-{}-openai-compatible-{}-zod-{}",
            pin("react"),
            pin("ai"),
            pin("@ai-sdk/openai-compatible"),
            pin("zod")
        ),
    };
    installed_node_modules(&prefix, deps.keys().map(String::as_str))
}

/// `~/.cache/ttfx/PREFIX/node_modules`, where `cargo xtask setup` installs a pinned set
/// of npm packages, once each of `names` is there; else an error naming the missing.
pub fn installed_node_modules<'a>(
    prefix: &str,
    names: impl Iterator<Item = &'a str>,
) -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let path = home.join(".cache/ttfx").join(prefix).join("node_modules");
    let missing: Vec<&str> = names
        .filter(|name| !path.join(name).join("package.json").is_file())
        .collect();
    if !missing.is_empty() {
        bail!(
            "no {} at {} (run `cargo xtask setup`, which installs them)",
            missing.join(", "),
            path.display()
        );
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_workspace_root_holds_the_workspace_manifest_and_every_crate() {
        let root = super::workspace_root();
        assert!(root.join("e2e/Cargo.toml").is_file(), "{}", root.display());
        assert!(
            root.join("crates/ttfx-core/testdata/decode").is_dir(),
            "{}",
            root.display()
        );
    }
}
