// Budgets on a set of runs, judged as `ttfx run --budget` and `ttfx report --budget`
// judge them (crates/ttfx-report/src/budget.rs): a metric of the report (`_ms` may be
// left off), a statistic (p50, p90, p95, p99, mean, min, max) over the runs that have
// it, numpy's linear percentiles (crates/ttfx-core/src/percentile.rs), and a limit:
// rates (`_per_s`) are floors, the rest ceilings, unless the limit says `>=` or `<=`. A
// metric no run reported fails its budget: a gate must not pass on what it never saw.

const STATS = ["p50", "p90", "p95", "p99", "mean", "min", "max"];

/** numpy's default (linear) percentile of ascending `sorted` (at least one value). */
export function percentile(sorted, p) {
  const h = ((sorted.length - 1) * p) / 100;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (h - lo) * (sorted[hi] - sorted[lo]);
}

/** count, mean, min, max and p50/p90/p95/p99 of the finite `values`; null for none. */
export function summarize(values) {
  const sorted = values.filter((v) => typeof v === "number" && Number.isFinite(v)).sort((a, b) => a - b);
  if (!sorted.length) return null;
  return {
    count: sorted.length,
    mean: sorted.reduce((s, v) => s + v, 0) / sorted.length,
    min: sorted[0],
    max: sorted[sorted.length - 1],
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
  };
}

/** A run's metric by its report name: the measured value, or a plain number. */
export function metricOf(run, name) {
  const m = run && run.metrics ? run.metrics[name] : undefined;
  if (typeof m === "number") return m;
  if (m && typeof m.value === "number") return m.value;
  return undefined;
}

// The report's name of `metric`: as given when some run has it, else with `_ms`.
function resolve(runs, metric) {
  if (runs.some((r) => metricOf(r, metric) !== undefined) || metric.endsWith("_ms")) return metric;
  return runs.some((r) => metricOf(r, `${metric}_ms`) !== undefined) ? `${metric}_ms` : metric;
}

// A limit: a number (a floor for rates, else a ceiling), or "<=800ms" / ">=20".
function parseLimit(metric, stat, limit) {
  const where = `budget ${metric}.${stat}`;
  if (typeof limit === "number" && Number.isFinite(limit)) return { atLeast: metric.endsWith("_per_s"), limit };
  if (typeof limit !== "string") throw new Error(`${where}: the limit must be a number or "<=N" / ">=N", got ${JSON.stringify(limit)}`);
  const m = /^\s*(<=|>=)?\s*(-?[0-9.]+(?:e-?[0-9]+)?)\s*(ms|s)?\s*$/.exec(limit);
  if (!m || !Number.isFinite(Number(m[2]))) throw new Error(`${where}: limit "${limit}" is not a number (e.g. 800, "<=800ms", ">=20")`);
  if (m[3] && !metric.endsWith("_ms")) throw new Error(`${where}: ${metric} is not a duration, give a plain number`);
  const atLeast = m[1] ? m[1] === ">=" : metric.endsWith("_per_s");
  return { atLeast, limit: Number(m[2]) * (m[3] === "s" ? 1000 : 1) };
}

/**
 * Judges `budgets` ({ metric: { stat: limit } }) over `runs`; one verdict per budget:
 * { metric, stat, atLeast, limit, value (null when no run had it), values, passed }.
 */
export function judge(runs, budgets) {
  if (!budgets || typeof budgets !== "object" || Array.isArray(budgets)) {
    throw new Error("budgets look like { ttft_visible_ms: { p90: 800 } } (metric: { statistic: limit })");
  }
  const verdicts = [];
  for (const [given, stats] of Object.entries(budgets)) {
    if (!stats || typeof stats !== "object") throw new Error(`budget ${given}: give { statistic: limit }, e.g. { p90: 800 }`);
    const metric = resolve(runs, given);
    const values = runs.map((r) => metricOf(r, metric)).filter((v) => v !== undefined && Number.isFinite(v));
    const summary = summarize(values);
    for (const [stat, limitGiven] of Object.entries(stats)) {
      const name = stat === "median" ? "p50" : stat;
      if (!STATS.includes(name)) throw new Error(`budget ${given}: unknown statistic \`${stat}\` (p50, p90, p95, p99, mean, min, max)`);
      const { atLeast, limit } = parseLimit(metric, name, limitGiven);
      const value = summary ? summary[name] : null;
      const passed = value !== null && (atLeast ? value >= limit : value <= limit);
      verdicts.push({ metric, stat: name, atLeast, limit, value, values, passed });
    }
  }
  return verdicts;
}

const fixed = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(2));

/** One line per verdict: the metric, the statistic, the budget, the value and the runs'. */
export function describe(v) {
  const unit = v.metric.endsWith("_ms") ? " ms" : "";
  const budget = `${v.atLeast ? ">=" : "<="} ${fixed(v.limit)}${unit}`;
  const runs = v.values.length ? `runs (${v.values.length}): ${v.values.map(fixed).join(", ")}${unit}` : "no run had it";
  if (v.value === null) return `${v.stat} of ${v.metric}: no run reported ${v.metric} (budget ${budget})`;
  const verdict = v.passed
    ? `within its budget ${budget}`
    : `${v.atLeast ? "under" : "over"} its budget ${budget} by ${fixed(Math.abs(v.value - v.limit))}${unit}`;
  return `${v.stat} of ${v.metric} is ${fixed(v.value)}${unit}, ${verdict}; ${runs}`;
}
