// Compiled with `tsc --strict` against the package's voice build ("ttfx-probe/voice").
import init, {
  Probe,
  TtsPlayer,
  VoiceHandoff,
  type AudioMeasurement,
  type TextSegment,
} from "ttfx-probe/voice";

await init();
const run = new Probe({ label: "voice" }).start();
const response = await run.fetch("/v1/chat/completions", { method: "POST" });
const player: TtsPlayer = await TtsPlayer.create({
  format: "pcm16",
  sampleRate: 24000,
  requestStart: run.requestStart,
});
const handoff = new VoiceHandoff({ requestStart: run.requestStart });
const audio: Promise<AudioMeasurement> = player.result(10000);
run.includeAudio(audio);
const segments: TextSegment[] = handoff.pushText("Hello there. ");
run.includeHandoff(handoff.result());
if (response.body) await player.play(response.body);
const ttfa: number | undefined = (await audio).milestones.first_audio_out;
const report = await run.finished();
const audioMs: number | undefined = report.run.timeline.audio?.audio_ms;
console.log(segments, ttfa, audioMs);

// @ts-expect-error: not a TTS format
TtsPlayer.create({ format: "mp3" });
