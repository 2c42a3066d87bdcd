// The probe's work on a stream, one task after the app's: every transport's tap copies
// its chunks here as they arrive and queues the rest (end, error, cancel) behind them.

import { chunkBatch } from "./chunk_batch.js";
import { costEnd, costStart, timed } from "./cost.js";
import { describe } from "./fault.js";

// A macrotask queue: the probe's chunk work runs after the app's own microtask chain for
// that chunk (its read() continuation, TextDecoderStream pipes, framework updates).
export function laterQueue(run) {
  const queue = [];
  const batch = chunkBatch(run);
  let scheduled = false;
  let closing = false;
  const channel = new MessageChannel();
  channel.port1.onmessage = () => timed("task", () => {
    scheduled = false;
    for (const [name, args] of queue.splice(0)) {
      if (name === "flush") {
        const started = costStart();
        run.guard(batch.flush);
        costEnd("flush", started);
      } else {
        // Every chunk before the end, error or cancel is sent first.
        run.guard(batch.flush);
        run.guard(() => run[name](...args));
      }
    }
    // Free the ports once the last queued call ran (open ports keep pages out of the
    // back/forward cache).
    if (closing && queue.length === 0) {
      channel.port1.close();
      channel.port2.close();
    }
  });
  const push = (name, ...args) => {
    queue.push([name, args]);
    if (!scheduled) {
      scheduled = true;
      channel.port2.postMessage(0);
    }
  };
  return {
    push,
    // Copies a chunk into the batch now, before it moves into the app's stream (and the
    // app can move its buffer away); the batch goes out in the later task like everything
    // else. Guarded: this runs inside the app's read, where a throw would break its body.
    copy(at, value) {
      const started = costStart();
      // run.guard, inlined: no closure per chunk on this path.
      let full = false;
      if (!run.settled) {
        try {
          full = batch.add(at, value);
        } catch (e) {
          run.fault(describe(e));
        }
      }
      if (full) push("flush");
      costEnd("chunk", started);
    },
    close() {
      closing = true;
      push("flush");
    },
  };
}
