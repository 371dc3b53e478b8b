// Numbers: the phone numbers the account's inbound calls come in on (GET /portal/voice/numbers),
// read-only: the operator assigns a number (PUT /admin/voice/numbers/{number}) with the model, agent,
// first message, language and voice its calls are answered with; a setting the operator left unset
// is the model's default. The account's inbound calls are the Calls list filtered by direction.
import { Loading, num, Page, unix, useLoad } from '../../ui/components.tsx';
import { useSession } from '../../ui/context.tsx';
import { href } from '../../ui/router.tsx';
import { DataTable } from '../../ui/table.tsx';
import { label } from './calls.tsx';

/** A number as GET /portal/voice/numbers answers it (absent: the model's default). */
export interface OwnNumber {
  number: string;
  model: string;
  agent?: { type: string; intent_model?: string; llm_model?: string; system_prompt?: string };
  first_message?: { response_id?: string; text?: string; mode?: string };
  language?: string;
  voice?: string;
  max_duration_seconds?: number;
  created_at: number;
  updated_at: number;
}

const DEFAULT = "the model's default";

const agentOf = (a: OwnNumber['agent']) => {
  if (!a) return DEFAULT;
  const models = [a.intent_model, a.llm_model].filter(Boolean).join(' + ');
  return (
    <>
      {`${a.type}: ${models}`}
      {a.system_prompt ? (
        <details>
          <summary>Prompt</summary>
          <p class="said">{a.system_prompt}</p>
        </details>
      ) : null}
    </>
  );
};

const firstMessageOf = (m: OwnNumber['first_message']) => {
  if (!m || (!m.text && !m.response_id && !m.mode)) return DEFAULT;
  if (!m.text && !m.response_id && m.mode === 'wait_for_callee') return 'none: waits for the caller';
  const said = m.text ? `“${m.text}”` : m.response_id ? `response ${m.response_id}` : "the pack's greeting";
  return `${said} (${label(m.mode ?? 'agent_first')})`;
};

export function NumbersPage() {
  const { api } = useSession();
  const list = useLoad(() => api.get<{ data: OwnNumber[] }>('/portal/voice/numbers'), []);
  return (
    <Page title="Numbers">
      <p class="muted">
        The phone numbers callers reach the account's agent on. The gateway's operator assigns each one, with how its calls are answered: ask them to add,
        change or release a number. Calls to them are billed to this account: see the <a href={href('calls', { direction: 'inbound' })}>inbound calls</a>.
      </p>
      <Loading loaded={list} />
      {list.data ? (
        <DataTable
          caption="Inbound numbers"
          testId="numbers"
          rows={list.data.data}
          rowKey={(n) => n.number}
          rowData={(n) => ['number', n.number]}
          empty="No number is assigned to this account."
          columns={[
            { label: 'Number', cell: (n) => n.number },
            { label: 'Model', cell: (n) => n.model },
            { label: 'Agent', cell: (n) => agentOf(n.agent) },
            { label: 'First message', cell: (n) => firstMessageOf(n.first_message) },
            { label: 'Language', cell: (n) => n.language ?? DEFAULT },
            { label: 'Voice', cell: (n) => n.voice ?? DEFAULT },
            { label: 'Longest call', num: true, cell: (n) => (n.max_duration_seconds ? `${num(n.max_duration_seconds)} s` : DEFAULT) },
            { label: 'Assigned', cell: (n) => unix(n.updated_at) },
          ]}
        />
      ) : null}
    </Page>
  );
}
