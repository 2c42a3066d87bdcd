// The probe's own main-thread cost, measured only when a benchmark asks for it.

// `cargo xtask bench` sets globalThis.__ttfxCostSamples to an array to collect the
// probe's main-thread time per piece of work, as name, ms, name, ms, …
export const costStart = () => (Array.isArray(globalThis.__ttfxCostSamples) ? performance.now() : -1);
export function costEnd(name, started) {
  if (started >= 0 && Array.isArray(globalThis.__ttfxCostSamples)) globalThis.__ttfxCostSamples.push(name, performance.now() - started);
}
export function timed(name, fn) {
  const started = costStart();
  try {
    return fn();
  } finally {
    costEnd(name, started);
  }
}
