// A DTMF detector for the fake carriers' callees: the Goertzel algorithm over 8 kHz audio in 20 ms
// blocks, each block's strongest row and column tones taken as a key when both stand well above the
// other tones of their group and the block is loud enough; a key is counted once per run of blocks
// (a phone's key and its pause). What a callee's phone menu does with the agent's in-band keys.
import { g711Decode } from '../../src/speech/g711.ts';
import { goertzelCoeff, goertzelPower } from '../../src/speech/tone.ts';

const ROWS = [697, 770, 852, 941];
const COLUMNS = [1209, 1336, 1477, 1633];
const KEYS = ['123A', '456B', '789C', '*0#D'];
const RATE = 8000;
const BLOCK = 160;

/** A frequency's power in the block, on the scale of full-scale samples (±1). */
const power = (block: Int16Array, frequency: number): number => goertzelPower(block, goertzelCoeff(frequency, RATE)) / (32768 * 32768);

/** The key a 20 ms block sounds, or null. */
function keyOf(block: Int16Array): string | null {
  const rows = ROWS.map((f) => power(block, f));
  const cols = COLUMNS.map((f) => power(block, f));
  const r = rows.indexOf(Math.max(...rows));
  const c = cols.indexOf(Math.max(...cols));
  const energy = block.reduce((e, x) => e + (x / 32768) ** 2, 0);
  const dominant = (ps: number[], i: number) => ps.every((p, j) => j === i || p * 5 < ps[i]!);
  // The two tones carry most of the block's energy (speech spreads it), each well above its group's others.
  if (energy < 1 || !dominant(rows, r) || !dominant(cols, c)) return null;
  if ((rows[r]! + cols[c]!) / (BLOCK / 2) < energy * 0.4) return null;
  return KEYS[r]![c]!;
}

/** The keys heard in μ-law audio (Twilio's), in order. */
export function detectDtmf(mulaw: Buffer): string {
  const samples = g711Decode('mulaw', mulaw);
  let keys = '';
  let last: string | null = null;
  for (let at = 0; at + BLOCK <= samples.length; at += BLOCK) {
    const key = keyOf(samples.subarray(at, at + BLOCK));
    if (key !== null && key !== last) keys += key;
    last = key;
  }
  return keys;
}
