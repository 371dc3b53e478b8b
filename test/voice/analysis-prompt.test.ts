// The analysis's prompt and how its answer is read (src/voice/analysis-prompt.ts), pure: each field
// typed exactly or null, an enum kept, a fenced or flat answer taken, the summary only when asked;
// the transcript's lines; a pack's intent, actions and entities.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { analysisFormat, analysisMessages, packFields, readAnswer } from '../../src/voice/analysis-prompt.ts';
import type { AnalysisRequest } from '../../src/shared/analysis-schema.ts';
import { analysisProblem } from '../../src/shared/analysis-schema.ts';

const REQ: AnalysisRequest = {
  model: 'chat',
  fields: [
    { name: 'mood', type: 'string', description: 'd', enum: ['calm', 'angry'] },
    { name: 'n', type: 'integer', description: 'd' },
    { name: 'x', type: 'number', description: 'd' },
    { name: 'ok', type: 'boolean', description: 'd' },
    { name: 'note', type: 'string', description: 'd' },
  ],
};

describe('analysis prompt', () => {
  it('reads each field typed exactly, else null', () => {
    const good = readAnswer(REQ, JSON.stringify({ summary: 'S', fields: { mood: 'calm', n: 3, x: 2.5, ok: false, note: 'hi' } }));
    assert.deepEqual(good, { summary: 'S', fields: { mood: 'calm', n: 3, x: 2.5, ok: false, note: 'hi' } });
    const bad = readAnswer(REQ, JSON.stringify({ summary: 7, fields: { mood: 'happy', n: 3.2, x: '2.5', ok: 'yes', note: 'y'.repeat(501) } }));
    assert.deepEqual(bad, { summary: null, fields: { mood: null, n: null, x: null, ok: null, note: null } });
    assert.deepEqual(readAnswer(REQ, 'no json here').fields, { mood: null, n: null, x: null, ok: null, note: null });
    assert.deepEqual(readAnswer(REQ, '[1, 2]').summary, null);
  });

  it('takes a fenced answer and fields at the top level; no summary when not asked', () => {
    const fenced = readAnswer(REQ, 'Here:\n```json\n{"summary": "S", "mood": "angry", "n": 1}\n```');
    assert.deepEqual([fenced.summary, fenced.fields.mood, fenced.fields.n, fenced.fields.ok], ['S', 'angry', 1, null]);
    assert.equal(readAnswer({ ...REQ, summary: false }, '{"summary": "S", "fields": {}}').summary, null);
  });

  it('the schema is strict, every key required and nullable; the transcript is its turns', () => {
    const f = analysisFormat(REQ) as any;
    assert.equal(f.json_schema.strict, true);
    assert.deepEqual(f.json_schema.schema.required, ['summary', 'fields']);
    assert.deepEqual(f.json_schema.schema.properties.fields.properties.n.type, ['integer', 'null']);
    assert.equal(f.json_schema.schema.properties.fields.additionalProperties, false);
    const [system, user] = analysisMessages(REQ, [
      { role: 'agent', text: 'Hello there, how can I help?', heard_text: 'Hello there', interrupted: true, start: 0, end: 1 },
      { role: 'callee', text: '42', dtmf: '42', start: 1.25, end: 2 },
    ]);
    assert.match(system!.content!, /fields\.mood \(string; one of "calm", "angry", or null\)/);
    assert.equal(user!.content, 'The transcript:\n[0.0s] Agent: Hello there [interrupted]\n[1.3s] Callee: (keys) 42');
  });

  it("a pack's fields: the last action's intent, else the last heard (on the agent turn that answered it); entities merged in order", () => {
    // As a call records them (src/voice/speaking.ts): the intent and entities the pack read in the
    // callee's words ride on the agent's answer.
    const turns = [
      { role: 'callee' as const, text: 'a', start: 0, end: 1 },
      { role: 'agent' as const, text: 'A', start: 1, end: 2, intent: 'BANKING.ATM', entities: { amount: 500 } },
      { role: 'callee' as const, text: 'b', start: 2, end: 3 },
      { role: 'agent' as const, text: 'B', start: 3, end: 4, entities: { amount: 700 } },
    ];
    const action = { action: 'CREATE_DISPUTE', intent: 'BANKING.DISPUTE', entities: { ref: 'X1' }, at: 3 };
    assert.deepEqual(packFields(turns, [action]), { intent: 'BANKING.DISPUTE', actions: ['CREATE_DISPUTE'], entities: { amount: 700, ref: 'X1' } });
    assert.deepEqual(packFields(turns, []), { intent: 'BANKING.ATM', actions: [], entities: { amount: 700 } });
  });

  it('refuses twin names, an enum off its type, a boolean enum, nothing to extract', () => {
    const f = REQ.fields!;
    assert.equal(analysisProblem({ model: 'm', fields: [f[0]!, f[0]!] })?.field, 'fields.1.name');
    assert.equal(analysisProblem({ model: 'm', fields: [{ ...f[1]!, enum: [1, 1.5] }] })?.field, 'fields.0.enum');
    assert.equal(analysisProblem({ model: 'm', fields: [{ ...f[3]!, enum: [1] }] })?.field, 'fields.0.enum');
    assert.equal(analysisProblem({ model: 'm', summary: false })?.field, 'fields');
    assert.equal(analysisProblem(REQ), null);
  });
});
