// ttfx-probe/runner: chat turns measured in a page driven by any Node.js test runner
// (Playwright, Puppeteer, WebdriverIO), with the inject bundle `ttfx run --inject` uses
// (the package's `inject.js`) and the package's analysis wasm making the reports here.
// docs/qa.md in the ttfx repository gives each runner's recipe.

import { readFileSync } from "node:fs";
import { summarize, metricOf } from "./budget.js";
import { schemaOf } from "./replay.js";

export { measureTurn, streamOf } from "./turn.js";
export { judge, describe, summarize, percentile, metricOf } from "./budget.js";

const PACKAGE = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
const BUNDLE = new URL("../inject.js", import.meta.url);

/** What `selection.probe` says of the bundle: its version and file (as `ttfx run` says). */
export const probeLabel = `ttfx-probe ${PACKAGE.version}, from ${BUNDLE.pathname}`;

/**
 * `match` as the bundle takes it (`ttfx run --match`'s rules): a string is a substring
 * of the URL, `re:PATTERN` or `re:/PATTERN/FLAGS` or a RegExp a pattern; the flags `g`
 * and `y` are refused (they make one URL's test depend on the one before).
 */
export function matchConfig(match) {
  if (match === null || match === undefined) return null;
  let source;
  let flags = "";
  if (match instanceof RegExp) {
    source = match.source;
    flags = match.flags;
  } else if (typeof match === "string" && match.startsWith("re:")) {
    const literal = /^\/(.*)\/([a-z]*)$/s.exec(match.slice(3));
    [source, flags] = literal ? [literal[1], literal[2]] : [match.slice(3), ""];
  } else if (typeof match === "string") {
    return { substring: match };
  } else {
    throw new Error(`match must be a string or a RegExp, got ${typeof match}`);
  }
  if (/[gy]/.test(flags)) throw new Error(`match: the flags g and y are refused (got /${source}/${flags})`);
  new RegExp(source, flags); // throws a SyntaxError naming the pattern's fault, here rather than in the page
  return { pattern: source, flags };
}

/**
 * The script to add before the page's own scripts (Playwright `addInitScript`,
 * Puppeteer `evaluateOnNewDocument`, Cypress `onBeforeLoad`): the configuration, then
 * the bundle, as `ttfx run --inject` adds them.
 */
export function injectSource({ match = null } = {}) {
  const config = JSON.stringify({ match: matchConfig(match) });
  return `globalThis.__ttfxInjectConfig = ${config};\n${readFileSync(BUNDLE, "utf8")}`;
}

/**
 * A batch document (docs/report.md) over `runs`: outcomes, statistics per metric (numpy
 * linear percentiles), the runs. `ttfx report FILE` reads it (it recomputes the statistics
 * from the runs), and so does `ttfx report FILE --html OUT`.
 */
export function batchOf(runs) {
  const outcomes = { total: runs.length, completed: 0, aborted: 0, failed: 0, incomplete: 0 };
  const values = new Map();
  for (const run of runs) {
    const outcome = run.metrics && run.metrics.outcome;
    if (outcome in outcomes && outcome !== "total") outcomes[outcome] += 1;
    for (const name of Object.keys(run.metrics || {})) {
      const v = metricOf(run, name);
      if (v === undefined) continue;
      if (!values.has(name)) values.set(name, []);
      values.get(name).push(v);
    }
  }
  const statistics = {};
  for (const [name, list] of [...values].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const s = summarize(list);
    if (s) statistics[name] = s;
  }
  return {
    schema_version: Math.max(1, ...runs.map(schemaOf)),
    kind: "batch",
    generator: `ttfx-probe ${PACKAGE.version} (runner)`,
    outcomes,
    statistics,
    runs,
  };
}
