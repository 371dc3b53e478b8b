// New campaign: a CSV list of numbers (checked in the browser, its invalid rows shown with why),
// the voice model, its agent and greeting, the calling hours, concurrency, retries and an optional
// analysis; then the cost range POST /portal/voice/batches/estimate gives for exactly that body,
// and only then Start (POST /portal/voice/batches with an Idempotency-Key, so a second click or a
// retried request makes no second campaign). Changing anything asks for a new estimate.
import { useMemo, useRef, useState } from 'preact/hooks';
import { useSession } from '../../ui/context.tsx';
import { cents, ErrorBox, Field, Loading, num, Page, useAction, useLoad } from '../../ui/components.tsx';
import { href, useRoute } from '../../ui/router.tsx';
import type { ModelInfo } from '../../ui/speech.tsx';
import type { CallList } from './campaign-csv.ts';
import { batchBody, emptyForm, type CampaignForm } from './campaign-body.ts';
import { AnalysisFields, ListPicker, RetryFields, WindowFields } from './campaign-fields.tsx';
import type { Batch } from './campaign-types.ts';

/** POST /portal/voice/batches/estimate: the numbers, and what calling them may cost. */
interface Estimate {
  numbers: number;
  valid: number;
  invalid: number;
  /** The most calls the batch may place: its valid numbers times the attempts each may get. */
  attempts_max: number;
  cost_cents: { min: number; max: number; typical: number };
}

const randomKey = () => Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, '0')).join('');

export function NewCampaignPage() {
  const { api } = useSession();
  const route = useRoute();
  const models = useLoad(async () => (await api.get<{ data: (ModelInfo & { price_per_minute_cents?: number })[] }>('/portal/models')).data, []);
  const [form, setForm] = useState<CampaignForm>(emptyForm);
  const [list, setList] = useState<CallList | null>(null);
  const [estimate, setEstimate] = useState<{ key: string; value: Estimate } | null>(null);
  const idempotency = useRef<{ key: string; value: string } | null>(null);
  const estimating = useAction();
  const starting = useAction();
  const of = (type: string) => (models.data ?? []).filter((m) => m.type === type);
  const voices = of('voice');
  const llms = of('llm').map((m) => m.id);
  const f: CampaignForm = { ...form, model: form.model || voices[0]?.id || '', analysisModel: form.analysisModel || llms[0] || '' };
  const set = (patch: Partial<CampaignForm>) => setForm((x) => ({ ...x, ...patch }));
  const body = useMemo(() => (list ? batchBody(f, list.calls) : null), [JSON.stringify(f), list]);
  const key = useMemo(() => (body ? JSON.stringify(body) : ''), [body]); // a list of 10,000 rows is a megabyte of JSON: once per change
  const current = estimate && estimate.key === key ? estimate.value : null;
  const model = voices.find((m) => m.id === f.model);

  const estimateCost = () =>
    estimating.run(async () => {
      setEstimate(null);
      setEstimate({ key, value: await api.send<Estimate>('POST', '/portal/voice/batches/estimate', body) });
    });
  const start = () =>
    starting.run(async () => {
      if (idempotency.current?.key !== key) idempotency.current = { key, value: randomKey() };
      const batch = await api.send<Batch>('POST', '/portal/voice/batches', body, { 'idempotency-key': idempotency.current.value });
      route.navigate(`campaigns/${batch.id}`);
    });

  return (
    <Page title="New campaign">
      <p>
        <a href={href('campaigns')}>All campaigns</a>
      </p>
      <Loading loaded={models} />
      {models.data && voices.length === 0 ? <p class="muted">No voice model is active on your account.</p> : null}
      {models.data && voices.length > 0 ? (
        <form
          class="card"
          aria-label="New campaign"
          onSubmit={(e) => {
            e.preventDefault();
            if (current) void start();
          }}
        >
          <ListPicker list={list} onList={setList} />
          <div class="filters">
            <Field label="Name (optional)">
              <input name="name" maxLength={200} value={f.name} onInput={(e) => set({ name: e.currentTarget.value })} />
            </Field>
            <Field label="Voice model">
              <select name="model" value={f.model} onChange={(e) => set({ model: e.currentTarget.value })}>
                {voices.map((m) => (
                  <option key={m.id} value={m.id}>
                    {m.id}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Agent">
              <select name="agent" value={f.agent} onChange={(e) => set({ agent: e.currentTarget.value })}>
                <option value="">The model's own (its intent pack)</option>
                {of('intent').map((m) => (
                  <option key={m.id} value={`intent:${m.id}`}>
                    Intent pack {m.id}
                  </option>
                ))}
                {llms.map((m) => (
                  <option key={m} value={`llm:${m}`}>
                    LLM {m}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Most calls at once (optional)" hint="Empty: the account's call limit.">
              <input
                type="number"
                name="max_concurrent"
                min={1}
                step={1}
                value={f.maxConcurrent}
                onInput={(e) => set({ maxConcurrent: e.currentTarget.value })}
              />
            </Field>
          </div>
          {f.agent.startsWith('llm:') ? (
            <Field label="System prompt" hint="{{name}} is filled in from each row's variables.">
              <textarea
                name="system_prompt"
                rows={4}
                required
                maxLength={8000}
                value={f.systemPrompt}
                onInput={(e) => set({ systemPrompt: e.currentTarget.value })}
              />
            </Field>
          ) : null}
          <Field label="First message (optional)" hint="What the agent says when the callee answers; empty: the agent's own greeting. {{name}} is filled in.">
            <textarea name="first_message" rows={2} maxLength={1000} value={f.firstMessage} onInput={(e) => set({ firstMessage: e.currentTarget.value })} />
          </Field>
          <WindowFields f={f} set={set} />
          <RetryFields f={f} set={set} />
          <AnalysisFields f={f} set={set} llms={llms} />
          {model?.price_per_minute_cents !== undefined ? (
            <p class="muted">
              {f.model} costs {cents(model.price_per_minute_cents)} a minute, billed by the answered second; busy, unanswered and failed calls cost nothing.
            </p>
          ) : null}
          <div class="actions">
            <button type="button" disabled={!list || list.calls.length === 0 || estimating.busy} onClick={() => void estimateCost()}>
              {estimating.busy ? 'Estimating…' : 'Estimate cost'}
            </button>
            <button type="submit" class="primary" disabled={!current || starting.busy}>
              Start campaign
            </button>
          </div>
          {!list ? <p class="muted">Pick a list of numbers first.</p> : null}
          {list && !current ? <p class="muted">Estimate the cost to start the campaign.</p> : null}
          <ErrorBox error={estimating.error} />
          {current ? <EstimateView e={current} /> : null}
          <ErrorBox error={starting.error} />
        </form>
      ) : null}
    </Page>
  );
}

function EstimateView({ e }: { e: Estimate }) {
  return (
    <div class="notice" role="status" data-testid="estimate">
      <p>
        <strong data-testid="estimate-range">
          {cents(e.cost_cents.min)} to {cents(e.cost_cents.max)}
        </strong>
        , typically {cents(e.cost_cents.typical)}, for {num(e.valid)} number{e.valid === 1 ? '' : 's'}
        {e.attempts_max > e.valid ? `, at most ${num(e.attempts_max)} calls in all with retries` : ''}. Each call is billed as it ends; nothing is held for
        calls not yet placed, and a campaign the wallet cannot pay for pauses until a top-up.
      </p>
      {e.invalid > 0 ? (
        <p>
          The gateway refuses {num(e.invalid)} of the {num(e.numbers)} numbers (not valid numbers of their country, or a country the model does not call); they
          are listed on the campaign's page and not called.
        </p>
      ) : null}
    </div>
  );
}
