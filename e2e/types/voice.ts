// Compiled with `tsc --strict` against the package's voice build ("ttfx-probe/voice").
import init, {
  Probe,
  TtsPlayer,
  VoiceHandoff,
  VoiceTurn,
  type AudioMeasurement,
  type TextSegment,
  type TurnMeasurement,
  type Utterance,
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

// A voice turn: the microphone's speech and the transcription before the LLM request.
const mic: MediaStream = await navigator.mediaDevices.getUserMedia({ audio: true });
const turn: VoiceTurn = await VoiceTurn.create({
  stream: mic,
  hangoverMs: 500,
  onSpeechStart: (atMs: number) => console.log(atMs),
});
const utterance: Utterance = await turn.nextUtterance(30000);
const transcript: Response = await turn.fetchTranscription("/v1/audio/transcriptions", { method: "POST" });
const turnRun = new Probe({ label: "turn" }).start();
turnRun.includeTurn(turn.result(turnRun.requestStart ?? 0));
turn.interrupt(player);
turn.end();
const measured: TurnMeasurement = await turn.result(0, 15000);
const speechEnd: number | undefined = measured.milestones.speech_end;
const bargeIn: number | undefined = measured.turn.barge_in?.playback_stopped_ms;
turn.close();
console.log(utterance.speechEnd - utterance.speechStart, transcript.status, speechEnd, bargeIn);

// @ts-expect-error: the stream is required
VoiceTurn.create({ hangoverMs: 500 });
