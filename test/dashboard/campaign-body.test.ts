// The New campaign form's body (src/dashboard/account/pages/campaign-body.ts): what a person leaves
// empty is left out, so the API's defaults apply (the legal calling hours above all), and what they
// choose is written as the batch contract names it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { batchBody, emptyForm, timeZones } from '../../src/dashboard/account/pages/campaign-body.ts';

const calls = [{ to: '+919800000001', variables: { name: 'A' } }];

describe('batchBody', () => {
  it("sends only the model and the calls when nothing else is chosen: no window (the legal hours), no retry, the model's agent", () => {
    assert.deepEqual(batchBody({ ...emptyForm(), model: 'voice-local' }, calls), { model: 'voice-local', calls });
  });

  it('writes the window, concurrency, retries (minutes as seconds), an LLM agent, the first message and the analysis (allowed values of a number field as numbers, none for a boolean) as the contract names them', () => {
    const body = batchBody(
      {
        ...emptyForm(),
        model: 'voice-local',
        name: ' Dues ',
        agent: 'llm:chat-test',
        systemPrompt: 'Remind {{name}}.',
        firstMessage: 'Hello {{name}}',
        windowMode: 'custom',
        timeZone: 'Asia/Kolkata',
        days: ['mon', 'fri'],
        start: '10:00',
        end: '18:30',
        maxConcurrent: '3',
        attempts: '3',
        gapMinutes: '2',
        retryOn: ['busy'],
        analyse: true,
        analysisModel: 'chat-test',
        summary: false,
        fields: [
          { name: ' will_pay ', type: 'boolean', description: 'Agreed to pay', choices: 'yes' },
          { name: 'when', type: 'string', description: 'Day', choices: 'today, tomorrow,' },
          { name: 'rating', type: 'integer', description: '1 to 3', choices: '1, 2,3' },
        ],
      },
      calls,
    );
    assert.deepEqual(body, {
      model: 'voice-local',
      name: 'Dues',
      agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Remind {{name}}.' },
      first_message: { text: 'Hello {{name}}' },
      window: { time_zone: 'Asia/Kolkata', days: ['mon', 'fri'], start: '10:00', end: '18:30' },
      max_concurrent: 3,
      retry: { on: ['busy'], max_attempts: 3, min_gap_seconds: 120 },
      analysis: {
        model: 'chat-test',
        summary: false,
        fields: [
          { name: 'will_pay', type: 'boolean', description: 'Agreed to pay' },
          { name: 'when', type: 'string', description: 'Day', enum: ['today', 'tomorrow'] },
          { name: 'rating', type: 'integer', description: '1 to 3', enum: [1, 2, 3] },
        ],
      },
      calls,
    });
    assert.deepEqual(batchBody({ ...emptyForm(), model: 'm', agent: 'intent:intent-demo' }, []).agent, { type: 'intent', intent_model: 'intent-demo' });
  });

  it('sends a number field typed wrong as typed, so the API refuses it naming the field', () => {
    assert.equal(batchBody({ ...emptyForm(), model: 'm', maxConcurrent: 'two' }, []).max_concurrent, 'two');
  });
});

describe('timeZones', () => {
  it("offers the zones by their current names (Asia/Kolkata, not the Asia/Calcutta of the browser's data), sorted, with the chosen one", () => {
    const zones = timeZones('Etc/GMT+5');
    assert.ok(zones.includes('Asia/Kolkata') && !zones.includes('Asia/Calcutta'));
    assert.ok(zones.includes('Etc/GMT+5'));
    assert.deepEqual(zones, [...zones].sort());
  });
});
