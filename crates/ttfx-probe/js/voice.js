// ttfx-probe/voice: the probe's front (../probe.js) with the voice API (TtsPlayer,
// AudioTap, VoiceHandoff, VoiceTurn) from the voice build's wasm. Its runs can include voice
// results, which its analysis merges: runs use the Analysis linked into this wasm, on the
// main thread in idle time (the page loaded this wasm for audio anyway), instead of the
// text Worker, whose analysis has no voice.
import init, { Analysis } from "./ttfx_probe.js";
import { Probe as FrontProbe } from "../probe.js";

export { TtsPlayer, AudioTap, VoiceHandoff, VoiceTurn } from "./ttfx_probe.js";
export { ProbeRun, FetchHandle, VERSION, REPORT_RING, version, now } from "../probe.js";
export default init;

export class Probe extends FrontProbe {
  constructor(options) {
    const o = options || {};
    super({ ...o, analysis: o.analysis || (async () => (await init(), new Analysis())) });
  }

  start(label) {
    const run = super.start(label);
    run.includeAudio = (result) => run.include("audio", result);
    run.includeHandoff = (result) => run.include("handoff", result);
    run.includeTurn = (result) => run.include("turn", result);
    return run;
  }
}
