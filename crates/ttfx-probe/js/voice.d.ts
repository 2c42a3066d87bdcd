// Types of ttfx-probe/voice: the front's API (../probe.js) plus the voice build's.
import { Probe as FrontProbe } from "../probe.js";
import type { AudioMeasurement, ProbeOptions, ProbeRun, TurnMeasurement } from "../probe.js";
import type { VoiceHandoffResult } from "./ttfx_probe.js";

export type * from "../probe.js";
export { ProbeRun, FetchHandle, VERSION, REPORT_RING, version, now } from "../probe.js";
export { TtsPlayer, AudioTap, VoiceHandoff, VoiceTurn } from "./ttfx_probe.js";
export type { TtsPlayerOptions, VoiceHandoffOptions, TextSegment, VoiceHandoffResult, VoiceTurnOptions, Utterance } from "./ttfx_probe.js";
export { default } from "./ttfx_probe.js";

/** A run that can include voice results in its report. */
export interface VoiceRun extends ProbeRun {
  /** The report waits (at most 15 s after the stream ends) for this TTS measurement
   *  (`player.result()`) and merges it. Call before the stream ends. */
  includeAudio(result: Promise<AudioMeasurement> | AudioMeasurement): void;
  /** The same for `handoff.result()` (or a promise of it). */
  includeHandoff(result: Promise<VoiceHandoffResult> | VoiceHandoffResult): void;
  /** The same for `turn.result(run.requestStart)`: the speech and transcription before
   *  the request, and a barge-in. */
  includeTurn(result: Promise<TurnMeasurement> | TurnMeasurement): void;
}

/** The front's Probe, whose runs take voice results; its analysis runs on the main
 *  thread in idle time (it merges voice results, which the text Worker cannot). */
export class Probe extends FrontProbe {
  constructor(options?: ProbeOptions);
  start(label?: string): VoiceRun;
}
