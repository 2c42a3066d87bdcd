// The fetch transport's instrument function: `window.fetch` wrapped, each matching call
// measured by a run (run.js takes the clocks, fetch_body.js wraps the body).

import { FetchHandle, instrumentOptions, matches, started, watchReply } from "./instrument.js";
import { inputUrl } from "./fetch_input.js";

// Wraps `window.fetch` so matching requests are measured with no app change.
export function instrumentFetch(probe, options) {
  const o = instrumentOptions(options);
  const original = globalThis.fetch;
  let active = true;
  const wrapper = function (input, init) {
    if (!(active && matches(o, inputUrl(input)))) return original.apply(this, arguments);
    let run;
    try {
      run = probe.start();
      watchReply(o, run);
    } catch (_) {
      return original.apply(this, arguments);
    }
    // run.fetch sets request_start, url and transport before its first await.
    const pending = run.fetch(input, init);
    started(o, run);
    return pending;
  };
  globalThis.fetch = wrapper;
  return new FetchHandle(() => {
    active = false;
    if (globalThis.fetch !== wrapper) return false;
    globalThis.fetch = original;
    return true;
  });
}
