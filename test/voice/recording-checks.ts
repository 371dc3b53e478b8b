// What the recording tests check of a call's recording (recording.test.ts, recording-carriers.test.ts,
// crash.test.ts's recorded call): the WAV's shape, and that each channel carries its side's audio
// where the transcript says that side spoke, and silence where only the other side did.
import assert from 'node:assert/strict';

export interface Wav {
  channels: number;
  rate: number;
  bits: number;
  /** Samples per channel. */
  left: Int16Array;
  right: Int16Array;
  seconds: number;
}

export async function fetchRecording(base: string, key: string, id: string, query = ''): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const res = await fetch(`${base}/v1/voice/calls/${id}/recording${query}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** A canonical 44-byte-header PCM WAV, its size fields checked against its length. */
export function parseWav(bytes: Buffer): Wav {
  assert.equal(bytes.toString('ascii', 0, 4), 'RIFF');
  assert.equal(bytes.toString('ascii', 8, 12), 'WAVE');
  assert.equal(bytes.readUInt32LE(4), bytes.length - 8, 'RIFF size');
  assert.equal(bytes.toString('ascii', 36, 40), 'data');
  const dataBytes = bytes.readUInt32LE(40);
  assert.equal(dataBytes, bytes.length - 44, 'data size');
  const channels = bytes.readUInt16LE(22);
  const frames = dataBytes / (2 * channels);
  const left = new Int16Array(frames);
  const right = new Int16Array(frames);
  for (let i = 0; i < frames; i++) {
    left[i] = bytes.readInt16LE(44 + i * 4);
    right[i] = bytes.readInt16LE(44 + i * 4 + 2);
  }
  const rate = bytes.readUInt32LE(24);
  return { channels, rate, bits: bytes.readUInt16LE(34), left, right, seconds: frames / rate };
}

/** RMS of `samples` between `from` and `to` seconds. */
export function rms(samples: Int16Array, from: number, to: number, rate = 8000): number {
  const a = Math.max(0, Math.floor(from * rate));
  const b = Math.min(samples.length, Math.floor(to * rate));
  if (b <= a) return 0;
  let sum = 0;
  for (let i = a; i < b; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / (b - a));
}

type Turn = { role: string; start: number; end: number; dtmf?: string };

/**
 * Channel 0 (the callee) has energy in each callee turn and none in the agent's turns (where the
 * callee was silent); channel 1 (the agent) has energy in each agent turn. Turns are read inside
 * their edges (0.15 s) so a turn's own padding does not count.
 */
export function assertSidesApart(wav: Wav, transcript: Turn[]): void {
  assert.equal(wav.channels, 2);
  assert.equal(wav.rate, 8000);
  assert.equal(wav.bits, 16);
  const spoken = transcript.filter((t) => !t.dtmf && t.end - t.start > 0.5);
  const callee = spoken.filter((t) => t.role === 'callee');
  const agent = spoken.filter((t) => t.role === 'agent');
  assert.ok(callee.length > 0 && agent.length > 0, `both sides spoke: ${JSON.stringify(transcript)}`);
  const overlaps = (t: Turn, others: Turn[]) => others.some((c) => c.start < t.end && t.start < c.end);
  for (const t of callee) {
    const [a, b] = [t.start + 0.15, t.end - 0.15];
    assert.ok(rms(wav.left, a, b) > 300, `callee channel has the callee's turn ${a}-${b}: rms ${rms(wav.left, a, b)}`);
    if (!overlaps(t, agent)) assert.ok(rms(wav.right, a, b) < 100, `agent channel quiet while only the callee spoke ${a}-${b}: rms ${rms(wav.right, a, b)}`);
  }
  for (const t of agent) {
    const [a, b] = [t.start + 0.15, Math.min(t.end, wav.seconds) - 0.15];
    if (b - a < 0.3) continue;
    assert.ok(rms(wav.right, a, b) > 300, `agent channel has the agent's turn ${a}-${b}: rms ${rms(wav.right, a, b)}`);
    if (!overlaps(t, callee)) assert.ok(rms(wav.left, a, b) < 100, `callee channel quiet while only the agent spoke ${a}-${b}: rms ${rms(wav.left, a, b)}`);
  }
}
