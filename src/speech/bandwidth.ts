// Spectral folding: a telephone utterance's missing upper band made up from the band below it, for
// the offline recogniser. pocketsphinx's en-us model was trained on 16 kHz speech (its filter bank
// reaches 6.8 kHz); a call's 8 kHz audio brought up to 16 kHz has nothing above 4 kHz, so the
// fricatives and bursts that tell one consonant from another are missing where the model looks for
// them. Mirroring 2.5–4 kHz into 4–5.5 kHz (f → 8 kHz − f, the oldest bandwidth extension there is:
// multiply the band by (−1)^n) puts their energy back roughly where it belongs.
//
// Measured with `npm run eval:understanding` (held-out complaints spoken by en-us-slt over μ-law, the
// agent's pick among the pack model's readings; 43 turns): right 53.5 % → 65.1 % (en-us: 27.9 → 34.9 %).
// Cutoffs 1.5–3 kHz and gains 0.3–1.0 all gave 58–65 %. It costs the short answers: yes/no 95 → 90 %
// (one of 20), amounts unchanged; so the call's listener folds the turns it has no expectation for
// (an open request), and not the answers to a question (src/providers/local/transcribe.ts).

/** The lowest frequency mirrored above 4 kHz, and the mirror's gain against the band itself. */
const FOLD_FROM_HZ = 2500;
const FOLD_GAIN = 0.5;
const RATE = 16000;

/** Whether a call's turn heard with this expectation is folded (an open request: none). */
export function foldsFor(expect: string | null | undefined): boolean {
  return !expect;
}

/**
 * `pcm`, 16 kHz audio brought up from 8 kHz, with its 2.5–4 kHz band mirrored into 4–5.5 kHz: a
 * 4th-order high-pass (two RBJ biquads, Butterworth Q) picks the band, and every other sample of it
 * negated moves it to 8 kHz − f. A new array; `pcm` is not changed.
 */
export function foldUpperBand(pcm: Int16Array): Int16Array {
  const w = (2 * Math.PI * FOLD_FROM_HZ) / RATE;
  const alpha = Math.sin(w) / (2 * Math.SQRT1_2);
  const cos = Math.cos(w);
  const a0 = 1 + alpha;
  const b0 = (1 + cos) / 2 / a0;
  const b1 = -(1 + cos) / a0;
  const a1 = (-2 * cos) / a0;
  const a2 = (1 - alpha) / a0;
  const out = new Int16Array(pcm.length);
  // Each stage's last two inputs and outputs (direct form I).
  let x1 = 0,
    x2 = 0,
    y1 = 0,
    y2 = 0,
    u1 = 0,
    u2 = 0,
    v1 = 0,
    v2 = 0;
  for (let n = 0; n < pcm.length; n++) {
    const x = pcm[n]!;
    const y = b0 * x + b1 * x1 + b0 * x2 - a1 * y1 - a2 * y2;
    x2 = x1;
    x1 = x;
    y2 = y1;
    y1 = y;
    const v = b0 * y + b1 * u1 + b0 * u2 - a1 * v1 - a2 * v2;
    u2 = u1;
    u1 = y;
    v2 = v1;
    v1 = v;
    const s = x + FOLD_GAIN * (n % 2 === 1 ? -v : v);
    out[n] = s > 32767 ? 32767 : s < -32768 ? -32768 : Math.round(s);
  }
  return out;
}
