// What a batch keeps of its calls' analyses (issue 43 §2 on batches): the demo intent pack's dispute
// call (the scripted recogniser on the simulator) with an llm analysis from the fake OpenAI upstream
// (its wire format); the pack's intent in the results CSV's `intent` column.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestGateway } from '../helper.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import { voiceAccount, type VoiceAccount } from './helpers.ts';
import { CALLEES, putChatModel, putScriptedVoice, ScriptedStt } from './simulated.ts';
import { createBatch, ist, startBatchGateway, TestClock, waitForBatch } from './batches-helpers.ts';

/** The dispute callee (CALLEES): reports the ATM, says yes to a dispute, hangs up (about 18 s). */
const DISPUTE = '+919800000010';

describe('voice batches: analysis', () => {
  let gw: TestGateway;
  let stt: ScriptedStt;
  let llm: Awaited<ReturnType<typeof startOpenAIUpstream>>;
  let acc: VoiceAccount;
  before(async () => {
    stt = await ScriptedStt.start();
    llm = await startOpenAIUpstream();
    gw = await startBatchGateway(new TestClock(ist(12, 0)), {}, CALLEES);
    await putScriptedVoice(gw.url, stt, 'voice-test', [{ provider: 'simulator' }]);
    await putChatModel(gw.url, llm);
    acc = await voiceAccount(gw, 1000);
  });
  after(async () => {
    await gw?.destroy();
    await stt?.server.close();
    await llm?.close();
  });

  it("puts a pack call's intent (its analysis's own, before an llm field named intent) in the CSV's intent column", async () => {
    stt.say('ATM did not give money but my account got debited', 'haan');
    llm.next({ reply: JSON.stringify({ summary: 'A dispute was raised.', fields: { intent: 'atm_problem' } }) });
    const analysis = { model: 'chat-test', fields: [{ name: 'intent', type: 'string', description: 'Why the callee called' }] };
    const res = await createBatch(gw, acc.key, { model: 'voice-test', calls: [{ to: DISPUTE }], analysis });
    assert.equal(res.status, 201, res.text);
    const b = await waitForBatch(gw, acc.key, res.body.id, (x) => x.status === 'completed' && x.calls.data[0].analysis?.status === 'completed', 60_000);
    const row = b.calls.data[0];
    assert.equal(row.status, 'completed', JSON.stringify(row));
    assert.deepEqual(
      [row.analysis.intent, row.analysis.fields.intent, row.analysis.summary],
      ['BANKING.ATM.CASH_NOT_DISPENSED', 'atm_problem', 'A dispute was raised.'],
      JSON.stringify(row.analysis),
    );
    const csv = await fetch(`${gw.url}/v1/voice/batches/${res.body.id}/results`, { headers: { authorization: `Bearer ${acc.key}` } });
    const [header, line] = (await csv.text()).split('\r\n');
    const at = (name: string) => line!.split(',')[header!.split(',').indexOf(name)];
    assert.deepEqual([at('intent'), at('analysis.intent'), at('summary')], ['BANKING.ATM.CASH_NOT_DISPENSED', 'atm_problem', 'A dispute was raised.'], line);
  });
});
