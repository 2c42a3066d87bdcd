// ttfx-probe/runner: chat turns measured in a page driven by any Node.js test runner,
// with the inject bundle `ttfx run --inject` uses and the package's analysis.

/** A run as docs/report.md describes it (the report's `run`). */
export interface Run {
  id?: string;
  target?: string;
  timeline: {
    milestones: Record<string, number>;
    selection?: Record<string, unknown>;
    [field: string]: unknown;
  };
  metrics: Record<string, unknown>;
}

/** A batch document (docs/report.md): outcomes, statistics per metric, the runs. */
export interface Batch {
  schema_version: number;
  kind: "batch";
  generator: string;
  outcomes: { total: number; completed: number; aborted: number; failed: number; incomplete: number };
  statistics: Record<string, Summary>;
  runs: Run[];
}

export interface Summary {
  count: number;
  mean: number;
  min: number;
  max: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
}

/** Which requests are measured: a substring of the URL, `re:PATTERN`, `re:/P/FLAGS` or a RegExp. */
export type Match = string | RegExp | null;

/** Runs `fn(arg)` in the page and resolves to its JSON value (`page.evaluate`, `browser.execute`). */
export type Evaluate = <A, R>(fn: (arg: A) => R, arg: A) => Promise<R>;

export interface TurnOptions {
  /** Measure only requests whose URL matches (`ttfx run --match`); else the first stream after the submit. */
  match?: Match;
  /** The reply's element (`--reply CSS`); else the element whose text grew. */
  reply?: string | null;
  /** How long after the submit the stream may take to end (default 30 000 ms). */
  timeoutMs?: number;
  /** The run's id and target in the report. */
  id?: string | null;
  label?: string | null;
  /** What `selection.probe` says (default: the package's version and bundle). */
  probe?: string | null;
}

/** One chat turn: arm the probe, `action()` submits as a user does, resolve to the run. */
export function measureTurn(evaluate: Evaluate, action: () => unknown, options?: TurnOptions): Promise<Run>;

/** What the page's `window[Symbol.for("ttfx.inject")].take()` returns. */
export interface Recording {
  calls: unknown[][];
  runs: [number, number, string, string][];
  submitAt: number | null;
  now?: number;
}

/** The turn's stream from one recording taken after the reply ended (no reply element: no first_dom, first_paint). */
export function streamOf(taken: Recording, options?: { match?: Match; probe?: string | null }): Promise<Run>;

/** The script to add before the page's own scripts: the configuration, then the bundle. */
export function injectSource(options?: { match?: Match }): string;

/** `match` as the bundle takes it; throws on a bad pattern or the flags g and y. */
export function matchConfig(match: Match | undefined): null | { substring: string } | { pattern: string; flags: string };

/** What `selection.probe` says of the package's bundle. */
export const probeLabel: string;

/** A batch document over `runs` (`ttfx report FILE --html OUT` reads it). */
export function batchOf(runs: Run[]): Batch;

/** A limit: a number (a floor for `_per_s` rates, else a ceiling) or "<=800ms" / ">=20". */
export type Limit = number | string;
/** `{ ttft_visible_ms: { p90: 800 } }`: metric (`_ms` may be left off) → statistic → limit. */
export type Budgets = Record<string, Partial<Record<"p50" | "median" | "p90" | "p95" | "p99" | "mean" | "min" | "max", Limit>>>;

export interface Verdict {
  metric: string;
  stat: string;
  atLeast: boolean;
  limit: number;
  /** The statistic over the runs; null when no run reported the metric (which fails). */
  value: number | null;
  /** Each run's value of the metric. */
  values: number[];
  passed: boolean;
}

export function judge(runs: Run[], budgets: Budgets): Verdict[];
/** One line: the metric, the statistic, the budget, the value and the runs' values. */
export function describe(verdict: Verdict): string;
export function summarize(values: number[]): Summary | null;
/** numpy's default (linear) percentile of ascending values. */
export function percentile(sorted: number[], p: number): number;
export function metricOf(run: Run, name: string): number | undefined;
