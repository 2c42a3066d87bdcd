// What every transport's instrument function shares: its options, which URLs it
// measures, the reply it watches, and the handle that puts the page's original back.

import { disabled } from "./fault.js";
import { isElement } from "./paint.js";

// Returned by `instrumentFetch`; `restore()` stops measuring and puts the original fetch
// back when nobody wrapped it since (else the wrapper becomes a pass-through).
export class FetchHandle {
  constructor(restore) {
    this.restore = restore;
  }
}

// The options every instrument function takes: `match` (substring, RegExp or predicate
// on the absolute URL), `watch` (an Element or a function returning one), `onStart`
// (called with each measured run as it starts), `quietMs` (WebSocket runs).
export function instrumentOptions(options) {
  if (disabled) throw new Error("ttfx: the probe is switched off: " + disabled);
  const match = options && options.match;
  const test = typeof match === "string" ? (url) => url.includes(match) : match instanceof RegExp ? (url) => match.test(url) : typeof match === "function" ? (url) => match(url) === true : null;
  if (!test) throw new Error("ttfx: match must be a string, a RegExp or a function");
  const { watch, onStart, quietMs = 2000 } = options;
  if (watch !== undefined && watch !== null && typeof watch !== "function" && !isElement(watch)) throw new Error("ttfx: watch must be an Element or a function");
  if (onStart !== undefined && onStart !== null && typeof onStart !== "function") throw new Error("ttfx: onStart must be a function");
  if (typeof quietMs !== "number" || !(quietMs > 0 && quietMs <= 600000)) throw new Error(`ttfx: quietMs must be a number of ms above 0 and at most 600000, got ${quietMs}`);
  return { test, watch, onStart, quietMs };
}

// The reply element an instrument function's `watch` names, watched by `run`.
export function watchReply(o, run) {
  const element = typeof o.watch === "function" ? o.watch() : o.watch;
  if (isElement(element)) run.watch(element);
}

// Whether a URL is measured; a match function that throws measures nothing.
export function matches(o, url) {
  try {
    return !disabled && o.test(url);
  } catch (_) {
    return false;
  }
}

// The app's onStart, told of a run; what it throws is ignored.
export function started(o, run) {
  try {
    if (o.onStart) o.onStart(run);
  } catch (_) {
    // The app's callback: nothing of it reaches the run or the app.
  }
}

// Puts `Wrapped` at globalThis[name] with the original's constants and name as its own, and
// returns the handle that puts the original back where nobody replaced it since.
export function swap(name, Original, Wrapped, constants, stop) {
  // Its own name too: a minifier renames the class.
  Object.defineProperty(Wrapped, "name", { value: name });
  for (const key of constants) Object.defineProperty(Wrapped, key, { value: Original[key], enumerable: true });
  globalThis[name] = Wrapped;
  return new FetchHandle(() => {
    stop();
    if (globalThis[name] !== Wrapped) return false;
    globalThis[name] = Original;
    return true;
  });
}
