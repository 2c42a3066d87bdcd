// Work the page does not wait for: in idle time where the engine has requestIdleCallback,
// else in a task of its own.

export function idle(fn, timeout) {
  if (typeof requestIdleCallback === "function") requestIdleCallback(fn, { timeout });
  else setTimeout(() => fn(null), 1);
}
