// ttfx voice-activity detector (VoiceTurn): decides where speech starts and ends in its
// input, on the context's frame clock. Loaded from a Blob URL (no eval). It writes no
// output: the node is silent, and reaches the destination only through a zero gain.
//
// The rule (docs/probe.md, "Voice turns"; the frame counts come from ttfx-core's
// VadSettings::at_rate): the input, channels mixed (their mean), is cut into frames of
// `frameSamples` (10 ms) across render quanta. A frame is speech when its mean square is
// at or above `thresholdMeanSquare` (its RMS level in dBFS at or above the threshold).
// speech_start is the first frame of a run of `minSpeechFrames` consecutive speech
// frames, decided when that run completes. speech_end is the end of the last speech
// frame, decided once `hangoverFrames` non-speech frames have followed it; a speech frame
// inside the hangover continues the utterance. Each decision is posted at once with the
// frame numbers of the moment and of the decision.
class TtfxVad extends AudioWorkletProcessor {
  constructor(options) {
    super();
    const o = (options && options.processorOptions) || {};
    this.frame = Math.max(1, o.frameSamples | 0);
    this.minSpeech = Math.max(1, o.minSpeechFrames | 0);
    this.hangover = Math.max(1, o.hangoverFrames | 0);
    this.threshold = typeof o.thresholdMeanSquare === "number" ? o.thresholdMeanSquare : 3.16e-5;
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
