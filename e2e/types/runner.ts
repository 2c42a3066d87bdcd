// Compiled with `tsc --strict` (e2e test `package_types`): docs/qa.md's use of
// `ttfx-probe/runner` must type-check, and misuse must not. (`ttfx-probe/playwright`'s
// types import `@playwright/test`'s, which need Node.js's @types/node: not checked here.)
import { batchOf, describe, injectSource, judge, measureTurn, type Evaluate, type Run } from "ttfx-probe/runner";

declare const evaluate: Evaluate;
const source: string = injectSource({ match: "re:/completions$/i" });
const run: Run = await measureTurn(evaluate, async () => {}, { reply: "#answer", timeoutMs: 5000 });
const ttft: number | undefined = run.timeline.milestones.first_visible_token;
const verdicts = judge([run], { ttft_visible_ms: { p90: 800 }, decode_tokens_per_s: { p50: ">=20" } });
const line: string = describe(verdicts[0]);
const total: number = batchOf([run]).outcomes.total;
// @ts-expect-error: a statistic the budgets do not know
judge([run], { ttft_visible_ms: { p42: 800 } });
// @ts-expect-error: measureTurn needs the page's evaluate
await measureTurn(async () => {});

console.log(source, ttft, line, total);
