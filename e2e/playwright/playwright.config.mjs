// The Playwright project of e2e/tests/qa_runners.rs (docs/qa.md's "Playwright" job runs
// the same): Debian's Chromium through `executablePath`, never a browser Playwright
// downloads, with the flags every ttfx test gives Chromium on these machines.
import { defineConfig } from "@playwright/test";

export default defineConfig({
  testDir: ".",
  testMatch: "*.spec.mjs",
  // One browser at a time: the timing bounds are for a machine running one.
  workers: 1,
  retries: 0,
  timeout: 120000,
  reporter: [["json"], ["list"]],
  use: {
    browserName: "chromium",
    headless: true,
    launchOptions: {
      executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
      args: [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    },
    ttfxOptions: { ttfxBin: process.env.TTFX_BIN || null, budgets: ["ttft_visible.p90<=2s"] },
  },
});
