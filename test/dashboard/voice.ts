// A dashboard for the voice pages' tests: the gateway serving the build with the simulator carrier's
// callees, the scripted recogniser upstream, the voice model `voice-test` on them, and (asked) the
// fake OpenAI upstream as the llm `chat-test`. Registers the suite's before and after; the object's
// fields are set once before has run.
import { after, before } from 'node:test';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import type { CalleeScript } from '../../src/config.ts';
import { CALLEES, putChatModel, putScriptedVoice, ScriptedStt } from '../voice/simulated.ts';
import { startDashboard, type Dashboard } from './browser.ts';

export interface VoiceDashboard {
  d: Dashboard;
  stt: ScriptedStt;
  /** The fake OpenAI upstream behind `chat-test` (with `llm: true`). */
  llm: Awaited<ReturnType<typeof startOpenAIUpstream>>;
}

/** `callees` come before CALLEES (whose last answers any other number); `voice`: more of the voice config. */
export function voiceDashboard(opts: { callees?: CalleeScript[]; voice?: Record<string, unknown>; llm?: boolean } = {}): VoiceDashboard {
  const v = {} as VoiceDashboard;
  before(async () => {
    v.stt = await ScriptedStt.start();
    if (opts.llm) v.llm = await startOpenAIUpstream();
    const callees = [...(opts.callees ?? []), ...CALLEES];
    v.d = await startDashboard({ voice: { ...opts.voice, simulator: { callees } } });
    await putScriptedVoice(v.d.base, v.stt, 'voice-test', [{ provider: 'simulator' }]);
    if (opts.llm) await putChatModel(v.d.base, v.llm);
  });
  after(async () => {
    await v.d?.close();
    await v.stt?.server.close();
    await v.llm?.close();
  });
  return v;
}
