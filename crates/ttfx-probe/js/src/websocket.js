// The WebSocket transport: a run from an app `send()` to the end of the reply, each
// message an SSE event.

import { disabled } from "./fault.js";
import { instrumentOptions, matches, swap } from "./instrument.js";
import { addListener, feed, sseEvent } from "./message_feed.js";

// WebSocket: the probe's message listener is the socket's first. A run starts at an app
// send() while none is in progress; each text message is one SSE event; a binary one an
// anomaly with its size.
function tapSocket(socket, probe, o) {
  let tap = null;
  let timer = null;
  let last = 0;
  const stop = (name, at, ...args) => {
    clearTimeout(timer);
    if (tap) tap.stop(name, at, ...args);
    tap = null;
  };
  // Ends a run quiet for quietMs, at its last message; one timer, re-armed only when it fires.
  const quiet = () => {
    const idle = performance.now() - last;
    if (!tap) return;
    if (idle < o.quietMs) timer = setTimeout(quiet, o.quietMs - idle);
    else {
      tap.push("note", last, "quiet_end", `no message for ${o.quietMs} ms and no response.done: the run ends at its last message`);
      stop("end", last);
    }
  };
  addListener(socket, "message", (event) => {
    const t = tap;
    if (!t) return;
    const at = performance.now();
    last = at;
    t.run.guard(() => {
      const data = event.data;
      if (typeof data !== "string") {
        t.push("note", at, "binary_message", `a binary message of ${data.size === undefined ? data.byteLength : data.size} bytes, not decoded`);
        return;
      }
      t.add(at, sseEvent(data));
      // OpenAI Realtime's end of a reply: a string test first, no JSON.parse per message.
      if (data.includes('"response.done"') && /"type"\s*:\s*"response\.done"/.test(data)) stop("end", at);
    });
  });
  addListener(socket, "close", (event) => {
    const at = performance.now();
    if (event.wasClean) stop("end", at);
    else stop("fail", at, `WebSocket closed uncleanly (code ${event.code})`);
  });
  return {
    sent(at) {
      if (tap || !matches(o, socket.url)) return;
      const run = probe.launch(o, "websocket", at, null, socket.url);
      tap = Object.assign(feed(run), { run });
      last = at;
      timer = setTimeout(quiet, o.quietMs);
    },
  };
}

// Measures WebSockets to matching URLs: a run from an app `send()` on an idle socket to
// a `response.done` message, `quietMs` without a message, or the socket's close.
export function instrumentWebSocket(probe, options) {
  const o = instrumentOptions(options);
  const Original = globalThis.WebSocket;
  if (typeof Original !== "function") throw new Error("ttfx: this global scope has no WebSocket");
  const taps = new WeakMap();
  let active = true;
  const Wrapped = class WebSocket extends Original {
    constructor(url) {
      super(...arguments);
      try {
        // Every socket is tapped (a message outside a run returns at once), and `match`
        // is asked when a run would start, at a send: a socket opened before a page
        // measures (inject mode arms a turn after the page's load) is still measured.
        if (active) taps.set(this, tapSocket(this, probe, o));
      } catch (_) {
        // Not measured.
      }
    }
    send() {
      const at = performance.now();
      const result = super.send(...arguments);
      const tap = taps.get(this);
      try {
        if (tap && active && !disabled && this.readyState === 1) tap.sent(at);
      } catch (_) {
        // Not measured.
      }
      return result;
    }
  };
  return swap("WebSocket", Original, Wrapped, ["CONNECTING", "OPEN", "CLOSING", "CLOSED"], () => (active = false));
}
