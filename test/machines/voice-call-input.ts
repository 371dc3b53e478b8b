// A voice call's input for the machine's tests (voice-call.machine.test.ts, voice-call-answered-by.test.ts).
import type { VoiceCallInput } from '../../machines/voice-call.machine.ts';

export const input = (over: Partial<VoiceCallInput> = {}): VoiceCallInput => ({
  callId: 'call_1',
  account: 'user:1',
  model: 'voice-local',
  to: '+919800000001',
  from: null,
  createdAt: 0,
  maxDurationMs: 600_000,
  creditLimited: false,
  ringTimeoutMs: 30_000,
  spec: {},
  ...over,
});
