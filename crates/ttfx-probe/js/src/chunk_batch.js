// The body tap's batches: the copied bytes of a run's chunks with their arrival times.

// The body's chunks, copied but not yet analysed, go out in batches: once FLUSH_BYTES
// wait and when the stream ends. One call per chunk, every few ms, runs cold (about 85 µs
// per chunk in `cargo xtask bench`); a batch decodes in a warm loop. The arrival times
// are taken when each chunk is handed over, so batching changes no milestone.
const FLUSH_BYTES = 16 * 1024;

export function chunkBatch(run) {
  // Both buffers are kept from batch to batch: a batch is copied out when it goes (into
  // the worker's message, or the main-thread queue), so a stream allocates nothing per
  // chunk and nothing per batch, and gives the page's garbage collector no work.
  let bytes = new Uint8Array(FLUSH_BYTES);
  let used = 0;
  // [arrival ms since request_start, length] per chunk, in order.
  let meta = new Float64Array(256);
  let n = 0;
  const flush = () => {
    if (n === 0) return;
    run.chunks(meta.subarray(0, n), bytes.subarray(0, used));
    used = 0;
    n = 0;
    // One huge chunk grew the buffer: do not copy its size out with every later batch.
    if (bytes.length > 4 * FLUSH_BYTES) bytes = new Uint8Array(FLUSH_BYTES);
  };
  const add = (at, value) => {
    if (!(value instanceof Uint8Array)) {
      flush();
      run.oddChunk(at, "not_bytes");
      return false;
    }
    if (value.byteLength === 0 && value.buffer.byteLength === 0) {
      // The app transferred the chunk's buffer before this task ran.
      flush();
      run.oddChunk(at, "detached");
      return false;
    }
    // A full batch whose flush task has not run yet (chunks copied back to back as they
    // are read, in a burst) goes now: a batch holds at most one chunk past FLUSH_BYTES,
    // where WebKit's 11 MB chunks piled up past the 16 MiB the probe may hold.
    if (used >= FLUSH_BYTES) flush();
    if (used + value.byteLength > bytes.length) {
      const grown = new Uint8Array(Math.max(2 * bytes.length, used + value.byteLength));
      grown.set(bytes.subarray(0, used));
      bytes = grown;
    }
    if (n + 2 > meta.length) {
      const grown = new Float64Array(2 * meta.length);
      grown.set(meta);
      meta = grown;
    }
    bytes.set(value, used);
    used += value.byteLength;
    meta[n++] = at - run.start;
    meta[n++] = value.byteLength;
    return used >= FLUSH_BYTES;
  };
  return { add, flush };
}
