// The simulator carrier's callees as configuration (`voice.simulator.callees`, src/config.ts):
// each one's script, validated with the rest of the configuration at start.
import { Type, type Static, type TSchema } from 'typebox';

const Int = (min: number, max: number) => Type.Integer({ minimum: min, maximum: max });
const E164 = '^\\+[1-9][0-9]{6,14}$';
const Step = <T extends Record<string, TSchema>>(props: T) => Type.Object(props, { additionalProperties: false });

/**
 * A simulated callee (src/providers/simulator/): whether it answers, after how long, and what it
 * does once answered, step by step. `say` is spoken by tts-local (the voice, default `en-us`:
 * espeak-ng; `en-us-slt` is festival's far more natural US English voice);
 * `wait_agent` waits until the agent has been speaking `ms` (`speaking`: the next `say` barges in)
 * or has finished a reply (`done`, then `ms` of silence); `silence_ms` sends silence; `dtmf` keys its
 * digits `gap_ms` apart (default 100).
 */
export const CalleeScriptSchema = Type.Object(
  {
    to: Type.String({ pattern: `${E164.slice(0, -1)}|^\\*$` }),
    answer: Type.Union([Type.Literal('answer'), Type.Literal('busy'), Type.Literal('no_answer'), Type.Literal('fail')]),
    ring_ms: Type.Optional(Int(0, 600_000)),
    /** false: it answers but its media stream never opens (a carrier whose socket fails: the call ends media_timeout). */
    stream: Type.Optional(Type.Boolean()),
    /**
     * Line noise under everything the callee sends, at `dbfs` (phone lines: about -40), white (the
     * default) or pink, from `after_ms` into the stream (default 0), and at `before_dbfs` before it
     * (default none: digital silence): a line that gets noisier.
     */
    noise: Type.Optional(
      Type.Object(
        {
          dbfs: Type.Number({ minimum: -90, maximum: 0 }),
          color: Type.Optional(Type.Union([Type.Literal('white'), Type.Literal('pink')])),
          after_ms: Type.Optional(Int(0, 600_000)),
          before_dbfs: Type.Optional(Type.Number({ minimum: -90, maximum: 0 })),
        },
        { additionalProperties: false },
      ),
    ),
    steps: Type.Array(
      Type.Union([
        Step({ say: Type.String({ minLength: 1, maxLength: 1000 }), voice: Type.Optional(Type.String({ pattern: '^[a-z]{2,3}(-[a-z0-9]{2,8})*$' })) }),
        Step({ silence_ms: Int(1, 600_000) }),
        Step({ dtmf: Type.String({ pattern: '^[0-9*#]{1,32}$' }), gap_ms: Type.Optional(Int(0, 10_000)) }),
        Step({ wait_agent: Type.Union([Type.Literal('done'), Type.Literal('speaking')]), ms: Type.Optional(Int(0, 600_000)) }),
        Step({ hangup: Type.Literal(true) }),
        /** A voicemail's beep: a tone of `beep_hz` (default 1000) for `beep_ms`, sent as the callee's audio. */
        Step({ beep_ms: Int(20, 10_000), beep_hz: Type.Optional(Int(100, 3900)) }),
      ]),
      { maxItems: 200 },
    ),
  },
  { additionalProperties: false },
);
export type CalleeScript = Static<typeof CalleeScriptSchema>;
