// The XMLHttpRequest transport: `open` and `send` patched on the prototype, the body read
// from `responseText` as it grows.

import { disabled } from "./fault.js";
import { FetchHandle, instrumentOptions, matches } from "./instrument.js";
import { addListener, feed } from "./message_feed.js";

// XMLHttpRequest: `headers` at HEADERS_RECEIVED, the new part of `responseText` at each
// readystatechange and progress event, the end at load, error, timeout or abort.
function tapXhr(xhr, probe, o) {
  let tap = null;
  let next = null;
  const textual = () => xhr.responseType === "" || xhr.responseType === "text";
  const onEvent = (event) => {
    const t = tap;
    if (!t || t.over) return;
    const at = performance.now();
    const run = t.run;
    run.guard(() => {
      const type = event.type;
      if (!t.headers && xhr.readyState >= 2 && xhr.status !== 0) {
        t.headers = true;
        run.send("headers", at - run.start, xhr.status, xhr.getResponseHeader("content-type"), xhr.getResponseHeader("server-timing"));
        if (!textual()) run.send("anomaly", at - run.start, "not_streamed", `responseType "${xhr.responseType}": the probe does not read the body, so it has no chunks`);
      }
      if (xhr.readyState >= 3 && textual()) {
        const text = xhr.responseText;
        if (text.length > t.seen) {
          t.add(at, text.slice(t.seen));
          t.seen = text.length;
        }
      }
      if (type === "load") t.stop("end", at);
      else if (type === "abort") t.stop("cancel", at);
      else if (type === "error") t.stop("fail", at, "XMLHttpRequest error (network or CORS)");
      else if (type === "timeout") t.stop("fail", at, `XMLHttpRequest timed out (timeout ${xhr.timeout} ms)`);
    });
  };
  for (const type of ["readystatechange", "progress", "load", "abort", "error", "timeout"]) addListener(xhr, type, onEvent);
  return {
    arm(request) {
      next = request;
    },
    stop(name, at) {
      if (tap) tap.stop(name, at);
      tap = null;
    },
    begin(at) {
      if (!next) return;
      const [method, url] = next;
      next = null;
      const run = probe.launch(o, "xhr", at, method, url);
      tap = Object.assign(feed(run), { run, seen: 0, headers: false });
    },
  };
}

// Measures XMLHttpRequests to matching URLs: `open` and `send` are patched on the
// prototype, so instances stay native.
export function instrumentXhr(probe, options) {
  const o = instrumentOptions(options);
  const X = globalThis.XMLHttpRequest;
  if (typeof X !== "function") throw new Error("ttfx: this global scope has no XMLHttpRequest");
  const proto = X.prototype;
  const { open, send } = proto;
  const taps = new WeakMap();
  let active = true;
  const patchedOpen = function (method, url, async) {
    const result = open.apply(this, arguments);
    try {
      let tap = taps.get(this);
      // open() on a request in flight ends it, with no event.
      if (tap) tap.stop("cancel", performance.now());
      const href = new URL(String(url), globalThis.location && location.href).href;
      // A synchronous request blocks the page and delivers its body at once: not a stream.
      const measured = active && !(arguments.length > 2 && !async) && matches(o, href);
      if (measured && !tap) taps.set(this, (tap = tapXhr(this, probe, o)));
      if (tap) tap.arm(measured ? [String(method).toUpperCase(), href] : null);
    } catch (_) {
      // Not measured.
    }
    return result;
  };
  const patchedSend = function () {
    const tap = active && !disabled ? taps.get(this) : null;
    const at = performance.now();
    const result = send.apply(this, arguments);
    try {
      if (tap) tap.begin(at);
    } catch (_) {
      // Not measured.
    }
    return result;
  };
  proto.open = patchedOpen;
  proto.send = patchedSend;
  return new FetchHandle(() => {
    active = false;
    const mine = proto.open === patchedOpen && proto.send === patchedSend;
    if (mine) Object.assign(proto, { open, send });
    return mine;
  });
}
