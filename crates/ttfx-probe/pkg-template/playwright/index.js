// ttfx-probe/playwright: a Playwright Test fixture. `ttfx` adds the inject bundle (the
// one `ttfx run --inject` uses) to every page of the test's browser context before any of
// the page's scripts, measures the chat turns the test asks it to (`ttfx.turn`), attaches
// the runs to the test as a report (`ttfx-report.json`; `ttfx-report.html` when the
// `ttfx` binary is given), and `expect(ttfx).toMeetBudget(...)` judges them.
//
// The HTML page is written by the Rust report writer (`ttfx report FILE --html OUT`), so
// the fixture calls the binary when it is given (`ttfxBin` or $TTFX_BIN) rather than
// carry a second writer that could drift from it; without it the JSON is attached alone
// and one line says how to make the page.

import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { test as base, expect as baseExpect } from "@playwright/test";
import { batchOf, describe, injectSource, judge, measureTurn, probeLabel } from "../runner/index.js";

const DEFAULTS = { match: null, reply: null, timeoutMs: 30000, label: null, ttfxBin: null, budgets: [] };

/** What the `ttfx` fixture gives a test. */
class Ttfx {
  constructor(page, options) {
    this.page = page;
    this.options = options;
    /** The measured runs, in order (warm-up turns left out). */
    this.runs = [];
  }

  /**
   * One chat turn: `action` submits the prompt as a user does (a click, Enter); resolves
   * to its run. `options`: `page` (else the test's), `match`, `reply`, `timeoutMs`,
   * `id`, `warmup` (measured but kept out of the runs and the report).
   */
  async turn(action, options = {}) {
    const page = options.page || this.page;
    const merged = { ...this.options, ...options };
    const run = await measureTurn((fn, arg) => page.evaluate(fn, arg), action, {
      match: merged.match,
      reply: merged.reply,
      timeoutMs: merged.timeoutMs,
      label: merged.label,
      id: merged.id ?? `turn-${this.runs.length + 1}${options.warmup ? "-warmup" : ""}`,
      probe: probeLabel,
    });
    if (!options.warmup) this.runs.push(run);
    return run;
  }

  /** The runs as a batch document (docs/report.md). */
  batch() {
    return batchOf(this.runs);
  }

  /** Attaches the report to the test: its JSON, and its HTML page when the binary is given. */
  async attachTo(testInfo) {
    if (!this.runs.length) return;
    const json = testInfo.outputPath("ttfx-report.json");
    writeFileSync(json, JSON.stringify(this.batch(), null, 2));
    await testInfo.attach("ttfx-report.json", { path: json, contentType: "application/json" });
    const bin = this.options.ttfxBin || process.env.TTFX_BIN;
    if (!bin) {
      testInfo.annotations.push({
        type: "ttfx",
        description: "no HTML report: set ttfxBin or $TTFX_BIN to the ttfx binary, or run `ttfx report ttfx-report.json --html OUT`",
      });
      return;
    }
    const html = testInfo.outputPath("ttfx-report.html");
    const budgets = this.options.budgets.flatMap((b) => ["--budget", b]);
    const made = spawnSync(bin, ["report", json, "--html", html, ...budgets], { encoding: "utf8", timeout: 60000 });
    // Exit 1 is a budget that failed: the page is written and shows it.
    if (made.error || (made.status !== 0 && made.status !== 1)) {
      const why = made.error ? made.error.message : (made.stderr || "").trim().split("\n").pop();
      throw new Error(`\`${bin} report ${json} --html ${html}\` failed: ${why}`);
    }
    await testInfo.attach("ttfx-report.html", { path: html, contentType: "text/html" });
  }
}

export const test = base.extend({
  // The fixture's options: `test.use({ ttfxOptions: { match: "/v1/chat", ttfxBin } })`.
  ttfxOptions: [{}, { option: true }],
  ttfx: async ({ page, context, ttfxOptions }, use, testInfo) => {
    const options = { ...DEFAULTS, ...ttfxOptions };
    // Every page and frame of the context, from its next document on, before its scripts.
    await context.addInitScript({ content: injectSource({ match: options.match }) });
    const ttfx = new Ttfx(page, options);
    await use(ttfx);
    await ttfx.attachTo(testInfo);
  },
});

// The runs of what `expect` was given: the fixture, a batch, or an array of runs.
function runsOf(received) {
  if (received instanceof Ttfx) return received.runs;
  if (Array.isArray(received)) return received;
  if (received && Array.isArray(received.runs)) return received.runs;
  throw new Error("toMeetBudget: expect the ttfx fixture, a batch ({ runs }) or an array of runs");
}

export const expect = baseExpect.extend({
  /** `await expect(ttfx).toMeetBudget({ ttft_visible_ms: { p90: 800 } })` */
  toMeetBudget(received, budgets) {
    const verdicts = judge(runsOf(received), budgets);
    const failed = verdicts.filter((v) => !v.passed);
    const pass = failed.length === 0;
    const lines = (pass ? verdicts : failed).map((v) => `  ${describe(v)}`);
    const message = () =>
      pass
        ? `ttfx budget met, expected it not to be:\n${lines.join("\n")}`
        : `ttfx budget failed:\n${lines.join("\n")}`;
    return { pass, message, name: "toMeetBudget" };
  },
});
