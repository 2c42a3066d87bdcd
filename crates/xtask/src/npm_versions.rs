//! The npm tools and libraries `cargo xtask setup` installs, at their pinned versions.
//! The folders they go to carry the version (`paths`), so both setup and `paths` read the
//! pins here, below either of them.

/// TypeScript for the e2e test that type-checks the probe package's `.d.ts` files the way
/// an app would. 5.x: the compiler is plain JavaScript on Node.js (7.x ships native
/// binaries per platform).
pub const TYPESCRIPT_VERSION: &str = "5.9.3";

/// Vite for the e2e test that bundles the packed probe into an app, as a frontend team
/// would. 7.x runs on the Node.js 20 these machines have.
pub const VITE_VERSION: &str = "7.3.8";

/// esbuild bundles the probe's front from its modules and minifies it (`cargo xtask
/// probe-front`, `cargo xtask probe-pkg`): the part a page loads up front must stay under
/// 12 KB gzip, and its comments alone are 4 KB. The version Vite 7.3.8 itself installs;
/// the committed bundle is this version's output (a newer one may write other bytes).
pub const ESBUILD_VERSION: &str = "0.28.2";

/// Binaryen's wasm-opt (the npm build: JavaScript and wasm, no native binary) shrinks the
/// analysis worker's wasm after wasm-bindgen (`cargo xtask probe-pkg`): 1.7 KB gzip of
/// #15's 70 KB. Debian's binaryen 108 breaks these modules; 132 does not.
pub const BINARYEN_VERSION: &str = "132.0.0";

/// The libraries of the React chat UI fixture (e2e/chat-uis/react-openai, issue #20): a
/// React app that streams through the official `openai` client, built by Vite in its e2e
/// test. Installed here so nothing downloads at test time; its package.json lists the
/// same pins (a test checks). openai 6.x: 7.x asks for Node.js 22, these machines have 20.
pub const REACT_VERSION: &str = "19.3.1";
pub const OPENAI_VERSION: &str = "6.30.1";

/// The libraries of the Vercel AI SDK chat UI fixture (e2e/chat-uis/react-ai-sdk, issue
/// #36): a React app that streams with `streamText` of `ai` through
/// `@ai-sdk/openai-compatible`, built by Vite in its e2e test; its package.json lists the
/// same pins (a test checks). `ai` 6.x: every 7.x asks for Node.js 22, these machines have
/// 20. The two share `@ai-sdk/provider-utils` 4.0.65, so the bundle holds one copy. zod is
/// their peer dependency: pinned, or npm would pick its newest.
pub const AI_SDK_VERSION: &str = "6.0.326";
pub const AI_SDK_OPENAI_COMPATIBLE_VERSION: &str = "2.0.92";
pub const ZOD_VERSION: &str = "4.6.7";

/// The test runners of docs/qa.md (issue #34): the Playwright fixture of the probe
/// package (`ttfx-probe/playwright`) runs under `@playwright/test`, and the Puppeteer
/// recipe under `puppeteer-core`; their e2e test (e2e/tests/qa_runners.rs) drives
/// Debian's Chromium through `executablePath`, so none of them downloads a browser (setup
/// installs them with the download switched off). `playwright-core` is pinned beside
/// `@playwright/test` so the two are one release. puppeteer-core 24.x: every 25.x asks
/// for Node.js 22, these machines have 20.
pub const PLAYWRIGHT_VERSION: &str = "1.65.2";
pub const PUPPETEER_CORE_VERSION: &str = "24.43.1";

/// The JavaScript peer of `cargo xtask bench decode-browser` (#35): the SSE parser a team
/// streaming from an LLM API in its own JavaScript reaches for, fed to `JSON.parse`. 3.x:
/// `createParser({ onEvent })`; its ES module has no dependencies, so the bench page
/// loads it as installed.
pub const EVENTSOURCE_PARSER_VERSION: &str = "3.1.1";
