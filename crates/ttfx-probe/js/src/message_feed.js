// The taps of transports that hand over messages, not bytes (EventSource, XHR text,
// WebSocket): each message becomes body bytes as a fetch chunk would.

import { laterQueue } from "./later_queue.js";

const encoder = typeof TextEncoder === "function" ? new TextEncoder() : null;
export const addListener = (target, type, fn) => EventTarget.prototype.addEventListener.call(target, type, fn);

// One message as one SSE event: every decoder then sees one event per message, with
// the data exactly as dispatched (its lines as `data:` lines).
export const sseEvent = (data, head = "") => head + "data: " + String(data).split(/\r\n|\r|\n/).join("\ndata: ") + "\n\n";

// The body of a transport that hands over messages, not bytes: each message is copied
// into the run's batch as UTF-8 with its arrival time, as a fetch chunk is.
export function feed(run) {
  const later = laterQueue(run);
  // UTF-8 of one message, encoded into a buffer kept from message to message (the batch
  // copies it out), so a stream of messages allocates nothing per message, as a fetch
  // body does not. UTF-8 takes at most 3 bytes per UTF-16 unit.
  let scratch = new Uint8Array(1024);
  const tap = {
    over: false,
    add(at, text) {
      if (tap.over) return;
      if (scratch.length < 3 * text.length) scratch = new Uint8Array(3 * text.length);
      later.copy(at, scratch.subarray(0, encoder.encodeInto(text, scratch).written));
    },
    // Ends the run with `name` (end, cancel, fail) once; every copied message goes first.
    stop(name, at, ...args) {
      if (tap.over) return;
      tap.over = true;
      later.push(name, at, ...args);
      later.close();
    },
    push: later.push,
  };
  return tap;
}
