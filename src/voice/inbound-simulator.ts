// The simulator's inbound calls: a simulated caller rings one of the gateway's numbers
// (POST /admin/voice/simulator/calls `{to, from}`, src/http/routes/admin-voice-numbers.ts), the way
// a carrier's incoming call reaches the gateway: the call is taken or refused (src/voice/inbound.ts)
// and the caller, following the script of the simulator callee whose `to` is its number, opens the
// stream it was given and speaks Twilio's Media Streams on it, as the simulator's callees do.
// A refusal is the caller hearing the line (returned) and hanging up.
import type { SimulatorCarrier } from '../providers/simulator/voice.ts';
import type { AnswerIncoming, InboundAnswer } from './inbound-leg.ts';

/** What the admin route answers: the call taken (its id) or refused (its reason and line). */
export type SimulatedInbound = { taken: true; call_id: string; caller_sid: string } | { taken: false; reason: string; line: string; caller_sid: string };

export async function ringFromSimulator(
  deps: { answer: AnswerIncoming; simulator: Pick<SimulatorCarrier, 'ring'> },
  call: { to: string; from: string },
): Promise<SimulatedInbound> {
  let answer: InboundAnswer | null = null;
  const sid = await deps.simulator.ring(call, async (callSid, attach) => {
    answer = await deps.answer({ provider: 'simulator', number: call.to, caller: call.from, carrierCallId: callSid, through: () => true, attach });
    return answer.kind === 'stream' ? { url: answer.streamUrl, parameters: answer.parameters } : null;
  });
  const a = answer as InboundAnswer | null;
  if (a?.kind === 'stream') return { taken: true, call_id: a.callId, caller_sid: sid };
  return { taken: false, reason: a?.reason ?? 'error', line: a?.line ?? '', caller_sid: sid };
}
