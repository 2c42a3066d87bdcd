// The fetch transport's stream wrapping: the Response the app gets carries a body that
// yields exactly the server's bytes, each chunk timed as the network hands it over.

import { describe } from "./fault.js";
import { laterQueue } from "./later_queue.js";

// A fetch body is a byte stream: an app may read it with `getReader({ mode: "byob" })`.
const BYTE_STREAMS = (() => {
  try {
    new ReadableStream({ type: "bytes" });
    return true;
  } catch (_) {
    return false;
  }
})();

// Up to this many bytes are read ahead of the app, so arrival times do not depend on how
// fast the app reads.
const READ_AHEAD_BYTES = 16 * 1024 * 1024;

// A stream that yields exactly the bytes of `body`, timestamping each chunk when the
// network hands it over. A body the app stops reading for `abandonAfterMs` while bytes
// wait for it is `abandoned`: the run reports, and the tap reads only what the app asks
// for from then on (the bytes already queued stay the app's).
export function tapBody(body, run, abandonAfterMs) {
  const reader = body.getReader();
  const later = laterQueue(run);
  let enqueued = 0;
  let abandoned = false;
  let over = false;
  let controllerRef = null;
  let lastConsumed = -1;
  let lastProgress = performance.now();
  const watchdog = setInterval(() => {
    if (over || !controllerRef) return clearInterval(watchdog);
    const queued = READ_AHEAD_BYTES - (controllerRef.desiredSize || 0);
    const consumed = enqueued - queued;
    const t = performance.now();
    if (consumed !== lastConsumed || queued <= 0) {
      lastConsumed = consumed;
      lastProgress = t;
    } else if (t - lastProgress >= abandonAfterMs) {
      abandoned = true;
      clearInterval(watchdog);
      later.push("abandon", t, queued);
      later.close();
    }
  }, Math.min(1000, Math.max(10, abandonAfterMs / 4)));
  const source = {
    start(controller) {
      controllerRef = controller;
    },
    async pull(controller) {
      // Once abandoned, read only when the app waits for bytes.
      if (abandoned && (controller.desiredSize || 0) < READ_AHEAD_BYTES) return;
      for (;;) {
        let result;
        try {
          result = await reader.read();
        } catch (error) {
          over = true;
          if (!abandoned) {
            later.push("bodyError", performance.now(), String((error && error.name) || "Error") + ": " + describe(error));
            later.close();
          }
          controller.error(error);
          return;
        }
        const at = performance.now();
        if (result.done) {
          over = true;
          controller.close();
          // A BYOB read waiting at the end is answered with an empty view.
          if (controller.byobRequest) controller.byobRequest.respond(0);
          if (!abandoned) {
            later.push("end", at);
            later.close();
          }
          return;
        }
        const value = result.value;
        if (!BYTE_STREAMS) {
          // Copied now too: the app may transfer the chunk's buffer away (to a worker)
          // before a later task could read it, as it can in WebKit, which has no byte
          // streams.
          if (!abandoned) later.copy(at, value);
          enqueued += value.byteLength || 0;
          controller.enqueue(value);
          return;
        }
        // A byte stream cannot carry an empty chunk; read on, so the app's read is answered.
        if (value.byteLength === 0) continue;
        // Enqueueing moves the chunk's buffer into the stream, so the probe copies the
        // bytes into its batch just before: one memcpy, no allocation per chunk, and the
        // app can transfer its buffer away freely.
        if (!abandoned) later.copy(at, value);
        enqueued += value.byteLength;
        controller.enqueue(value);
        return;
      }
    },
    cancel(reason) {
      over = true;
      if (!abandoned) {
        later.push("cancel", performance.now());
        later.close();
      }
      return reader.cancel(reason);
    },
  };
  if (BYTE_STREAMS) {
    source.type = "bytes";
    return new ReadableStream(source, { highWaterMark: READ_AHEAD_BYTES });
  }
  return new ReadableStream(source, new ByteLengthQueuingStrategy({ highWaterMark: READ_AHEAD_BYTES }));
}

// Statuses whose Response cannot carry a body, and opaque responses (status 0), are
// handed to the app untouched: re-wrapping them would throw.
export function canWrap(response) {
  return response.body !== null && response.status >= 200 && response.status <= 599 && ![101, 103, 204, 205, 304].includes(response.status);
}

// A Response equal to `original` but for its body. `url`, `redirected` and `type` are
// read-only on a constructed Response, so they are copied as own properties.
export function wrapResponse(original, body) {
  const wrapped = new Response(body, { status: original.status, statusText: original.statusText, headers: original.headers });
  for (const key of ["url", "redirected", "type"]) Object.defineProperty(wrapped, key, { value: original[key], enumerable: true });
  return wrapped;
}
