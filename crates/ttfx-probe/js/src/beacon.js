// The field report's way to the collector.

// Sends a field report to the collector: `navigator.sendBeacon`, which outlives the page,
// else (no beacon API, or the browser's beacon queue refused it) a keepalive fetch with
// the page's own fetch (never an instrumented one, which could measure the beacon). Both
// have a 64 KiB budget; a field report is at most 16 KiB. Nothing here throws into the
// page, and a failed send is not retried.
export function beacon(url, body, pageFetch) {
  try {
    if (navigator.sendBeacon(url, new Blob([body], { type: "application/json" }))) return;
  } catch (_) {
    // No beacon API in this scope (a worker), or a URL it refuses: try fetch.
  }
  try {
    pageFetch.call(globalThis, url, { method: "POST", keepalive: true, body, headers: { "content-type": "application/json" } }).catch(() => {});
  } catch (_) {
    // Nowhere to send it: the report still reached the page.
  }
}
