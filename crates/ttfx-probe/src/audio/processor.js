// ttfx AudioWorklet tap: reports the first audible frame after it is armed.
// Loaded from a Blob URL (no eval). It never writes its output, so the node is silent;
// it is connected to the destination only so that the graph pulls it every quantum.
class TtfxTap extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const o = (options && options.processorOptions) || {};
    this.threshold = typeof o.threshold === "number" ? o.threshold : 0.001;
    this.armed = o.armed !== false;
    this.stopped = false;
    this.port.onmessage = (e) => {
      if (e.data === "arm") this.armed = true;
      if (e.data === "stop") this.stopped = true;
    };
  }
  process(inputs) {
    if (this.stopped) return false;
    const input = inputs[0];
    if (!this.armed || !input) return true;
    const th = this.threshold;
    let first = -1;
    for (const channel of input) {
      const end = first < 0 ? channel.length : first;
      for (let i = 0; i < end; i++) {
        const s = channel[i];
        if (s >= th || s <= -th) { first = i; break; }
      }
    }
    if (first >= 0) {
      this.armed = false;
      // currentFrame is the frame of this quantum's first sample.
      this.port.postMessage({ frame: currentFrame + first, sampleRate });
    }
    return true;
  }
}
// A second tap on the same context loads this module again: the name is taken then.
try { registerProcessor("ttfx-tap", TtfxTap); } catch (_) { /* already registered */ }
