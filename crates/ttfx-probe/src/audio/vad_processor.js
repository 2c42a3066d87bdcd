// ttfx voice-activity detector (VoiceTurn), loaded from a Blob URL. The rule, in 10 ms
// frames of the mixed channels, is documented in vad.rs and docs/probe.md; it posts the
// frame numbers of each decided speech start and end. It writes no output.
class TtfxVad extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const o = (options && options.processorOptions) || {};
    this.frame = Math.max(1, o.frameSamples | 0);
    this.minSpeech = Math.max(1, o.minSpeechFrames | 0);
    this.hangover = Math.max(1, o.hangoverFrames | 0);
    // RMS ≥ 10^(dB/20) ⇔ mean square ≥ 10^(dB/10); JS's pow keeps libm's out of the wasm.
    this.threshold = Math.pow(10, (typeof o.thresholdDbfs === "number" ? o.thresholdDbfs : -45) / 10);
    this.sum = 0; // sum of squares in the frame so far
    this.n = 0; // samples in the frame so far
    this.frameStart = 0; // frame number of the frame's first sample
    this.run = 0; // consecutive speech frames while not speaking
    this.runStart = 0;
    this.speaking = false;
    this.start = 0; // speech_start of the utterance in progress
    this.lastEnd = 0; // end of its last speech frame
    this.quiet = 0; // non-speech frames since then
    this.stopped = false;
    this.port.onmessage = (e) => {
      if (e.data === "stop") this.stopped = true;
    };
  }

  process(inputs) {
    if (this.stopped) return false;
    const input = inputs[0] || [];
    const channels = input.length;
    // An input with no channels (the track ended or is muted away) is a quantum of
    // silence: the clock goes on, so a hangover still completes.
    const length = channels ? input[0].length : 128;
    for (let i = 0; i < length; i++) {
      if (this.n === 0) this.frameStart = currentFrame + i;
      let s = 0;
      for (let c = 0; c < channels; c++) s += input[c][i];
      if (channels > 1) s /= channels;
      this.sum += s * s;
      this.n += 1;
      if (this.n === this.frame) {
        this.decide(this.sum / this.frame >= this.threshold, this.frameStart, this.frameStart + this.frame);
        this.sum = 0;
        this.n = 0;
      }
    }
    return true;
  }

  decide(speech, from, to) {
    if (this.speaking) {
      if (speech) {
        this.lastEnd = to;
        this.quiet = 0;
      } else if (++this.quiet >= this.hangover) {
        this.speaking = false;
        this.run = 0;
        this.port.postMessage({ kind: "end", start: this.start, end: this.lastEnd, at: to, sampleRate });
      }
      return;
    }
    if (!speech) {
      this.run = 0;
      return;
    }
    if (this.run === 0) this.runStart = from;
    if (++this.run >= this.minSpeech) {
      this.speaking = true;
      this.start = this.runStart;
      this.lastEnd = to;
      this.quiet = 0;
      this.port.postMessage({ kind: "start", start: this.start, at: to, sampleRate });
    }
  }
}
// A second turn on the same context loads this module again: the name is taken then.
try { registerProcessor("ttfx-vad", TtfxVad); } catch (_) { /* already registered */ }
