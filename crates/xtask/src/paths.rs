//! Fixed places in the workspace.

use std::path::PathBuf;

use crate::npm_versions;

/// The workspace root.
pub fn root() -> PathBuf {
    // `cargo run` (the `xtask` alias) sets CARGO_MANIFEST_DIR when it runs the binary:
    // that is this checkout's, where the compile-time one may name another checkout
    // that shares the target folder (a CI clone's binary, left in the folder, is then
    // run for this tree).
    let xtask = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    xtask.ancestors().nth(2).map(PathBuf::from).unwrap_or(xtask)
}

/// Cargo's target folder (shared by every build, Trunk's included).
pub fn target() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// Where Trunk puts the built lab page (matches `Trunk.toml`).
pub fn lab_dist() -> PathBuf {
    root().join("target").join("lab-dist")
}

/// The collector file `cargo xtask lab` serves by default (beside the built page).
pub fn lab_db() -> PathBuf {
    root().join("target").join("lab").join("field.db")
}

/// Where `cargo install` puts binaries.
pub fn cargo_bin() -> PathBuf {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"))
        .join("bin")
}

/// Vite's entry point, installed by `cargo xtask setup` into the per-user cache.
pub fn vite() -> PathBuf {
    npm_cache()
        .join(format!("vite-{}", npm_versions::VITE_VERSION))
        .join("node_modules/vite/bin/vite.js")
}

/// The React chat UI fixture's libraries (`react`, `react-dom`, `openai`), installed by
/// `cargo xtask setup` into one prefix of the per-user cache; the e2e helper finds it by
/// the same name (e2e/src/chat_uis.rs).
pub fn chat_ui_deps() -> PathBuf {
    npm_cache().join(format!(
        "chat-ui-deps-react-{}-openai-{}",
        npm_versions::REACT_VERSION,
        npm_versions::OPENAI_VERSION
    ))
}

/// The Vercel AI SDK chat UI fixture's libraries (`react`, `react-dom`, `ai`,
/// `@ai-sdk/openai-compatible`, `zod`), installed by `cargo xtask setup` into their own
/// prefix of the per-user cache; the e2e helper finds it by the same name
/// (e2e/src/paths.rs).
pub fn ai_sdk_chat_ui_deps() -> PathBuf {
    npm_cache().join(format!(
        "chat-ui-deps-react-{}-ai-{}-openai-compatible-{}-zod-{}",
        npm_versions::REACT_VERSION,
        npm_versions::AI_SDK_VERSION,
        npm_versions::AI_SDK_OPENAI_COMPATIBLE_VERSION,
        npm_versions::ZOD_VERSION
    ))
}

/// The test runners of docs/qa.md (`@playwright/test`, `playwright-core`,
/// `puppeteer-core`), installed by `cargo xtask setup` into one prefix of the per-user
/// cache; the e2e helper finds it by the same name (e2e/src/qa_runners.rs).
pub fn qa_runner_deps() -> PathBuf {
    npm_cache().join(format!(
        "qa-runners-playwright-{}-puppeteer-core-{}",
        npm_versions::PLAYWRIGHT_VERSION,
        npm_versions::PUPPETEER_CORE_VERSION
    ))
}

/// Where `cargo xtask setup` installs npm tools: per user, shared by every checkout, so a
/// warm machine does not install them again.
fn npm_cache() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".cache/ttfx")
}

/// esbuild's entry point, installed by `cargo xtask setup` into the per-user cache.
pub fn esbuild() -> PathBuf {
    npm_cache()
        .join(format!("esbuild-{}", npm_versions::ESBUILD_VERSION))
        .join("node_modules/esbuild/bin/esbuild")
}

/// Binaryen's wasm-opt, installed by `cargo xtask setup` into the per-user cache.
pub fn wasm_opt() -> PathBuf {
    npm_cache()
        .join(format!("binaryen-{}", npm_versions::BINARYEN_VERSION))
        .join("node_modules/binaryen/bin/wasm-opt")
}

/// TypeScript's compiler, installed by `cargo xtask setup` into the per-user cache.
pub fn tsc() -> PathBuf {
    npm_cache()
        .join(format!("typescript-{}", npm_versions::TYPESCRIPT_VERSION))
        .join("node_modules/typescript/bin/tsc")
}

/// eventsource-parser's package folder (`dist/index.js`, `package.json`), installed by
/// `cargo xtask bench decode-browser` into the per-user cache.
pub fn eventsource_parser() -> PathBuf {
    npm_cache()
        .join(format!(
            "eventsource-parser-{}",
            npm_versions::EVENTSOURCE_PARSER_VERSION
        ))
        .join("node_modules/eventsource-parser")
}
