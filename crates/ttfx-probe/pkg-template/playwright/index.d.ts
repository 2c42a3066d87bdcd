// ttfx-probe/playwright: the `ttfx` fixture for Playwright Test and its `toMeetBudget` matcher.

import type { Page, TestType, PlaywrightTestArgs, PlaywrightTestOptions, PlaywrightWorkerArgs, PlaywrightWorkerOptions, Expect } from "@playwright/test";
import type { Batch, Budgets, Match, Run } from "../runner/index.js";

export type { Batch, Budgets, Run } from "../runner/index.js";

export interface TtfxOptions {
  /** Measure only requests whose URL matches (`ttfx run --match`). */
  match?: Match;
  /** The reply's element (`ttfx run --reply`); else the element whose text grew. */
  reply?: string | null;
  /** How long after the submit a turn's stream may take to end (default 30 000 ms). */
  timeoutMs?: number;
  /** The runs' target in the report. */
  label?: string | null;
  /** The `ttfx` binary, for the HTML report (else $TTFX_BIN; without either, JSON only). */
  ttfxBin?: string | null;
  /** Budgets the HTML report shows, in `ttfx run --budget` syntax ("ttft_visible.p90<=800ms"). */
  budgets?: string[];
}

export interface TurnOptions {
  /** The page the turn happens in (default: the test's `page`). */
  page?: Page;
  match?: Match;
  reply?: string | null;
  timeoutMs?: number;
  id?: string;
  /** Measured but kept out of `runs` and the report (a fresh tab's first compile). */
  warmup?: boolean;
}

export interface Ttfx {
  /** The measured runs, in order. */
  readonly runs: Run[];
  /** One chat turn: `action` submits the prompt as a user does; resolves to its run. */
  turn(action: () => unknown, options?: TurnOptions): Promise<Run>;
  /** The runs as a batch document (docs/report.md). */
  batch(): Batch;
}

export const test: TestType<
  PlaywrightTestArgs & PlaywrightTestOptions & { ttfx: Ttfx; ttfxOptions: TtfxOptions },
  PlaywrightWorkerArgs & PlaywrightWorkerOptions
>;

export const expect: Expect<{
  /** The runs meet every budget: `{ ttft_visible_ms: { p90: 800 } }`. */
  toMeetBudget(received: Ttfx | Batch | Run[], budgets: Budgets): Promise<{ pass: boolean; message: () => string }>;
}>;
