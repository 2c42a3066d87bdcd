// The EventSource transport: the page's EventSource becomes a subclass whose events the
// probe hears first.

import { instrumentOptions, matches, swap } from "./instrument.js";
import { addListener, feed, sseEvent } from "./message_feed.js";

// EventSource: `headers` at `open`, each event the probe sees re-encoded as SSE, the end
// at the app's close() or the error that ends the connection. One run per EventSource:
// a reconnection is not measured.
function tapEventSource(source, run) {
  const tap = feed(run);
  const types = new Set(["open", "error"]);
  let lastId = "";
  let open = false;
  const onEvent = (event) => {
    if (tap.over) return;
    const at = performance.now();
    run.guard(() => {
      let head = event.type === "message" ? "" : `event: ${event.type}\n`;
      if (event.lastEventId !== lastId) head += `id: ${(lastId = event.lastEventId)}\n`;
      tap.add(at, sseEvent(event.data, head));
    });
  };
  tap.listen = (type) => {
    if (types.has(type) || tap.over) return;
    types.add(type);
    addListener(source, type, onEvent);
  };
  tap.listen("message");
  addListener(source, "open", () => {
    if (open || tap.over) return;
    open = true;
    const at = performance.now();
    run.guard(() => run.send("headers", at - run.start, 200, "text/event-stream", null));
  });
  addListener(source, "error", () => {
    // CONNECTING: the stream ended and the browser reconnects; CLOSED: it gave up.
    if (open) tap.stop("end", performance.now());
    else tap.stop("fail", performance.now(), "EventSource failed: no connection, or not a 200 text/event-stream response");
  });
  return tap;
}

// Measures the EventSources the page makes for matching URLs: `EventSource` becomes a
// subclass, so instances, `instanceof`, `onmessage` and the constants are the browser's.
// Its first lines have the shape of instrumentWebSocket's: a helper making both saved
// 85 B but cost 51 B gzip (measured), and the gzip is what a page downloads.
export function instrumentEventSource(probe, options) {
  const o = instrumentOptions(options);
  const Original = globalThis.EventSource;
  if (typeof Original !== "function") throw new Error("ttfx: this global scope has no EventSource");
  const taps = new WeakMap();
  let active = true;
  const Wrapped = class EventSource extends Original {
    constructor(url) {
      // The request starts in the constructor: take the clock before it.
      const at = performance.now();
      super(...arguments);
      try {
        if (active && matches(o, this.url)) taps.set(this, tapEventSource(this, probe.launch(o, "eventsource", at, "GET", this.url)));
      } catch (_) {
        // Not measured; the app's EventSource is untouched.
      }
    }
    // A named event type the app listens to is listened to by the probe too (first).
    addEventListener(type) {
      const tap = taps.get(this);
      if (tap) tap.listen(String(type));
      return super.addEventListener(...arguments);
    }
    close() {
      const tap = taps.get(this);
      if (tap) tap.stop("end", performance.now());
      return super.close(...arguments);
    }
  };
  return swap("EventSource", Original, Wrapped, ["CONNECTING", "OPEN", "CLOSED"], () => (active = false));
}
