// A voice call's requests to the integrator while the call goes on (issue 41 §5): a pack's business
// action (CREATE_DISPUTE with its entities) or an LLM agent's tool call, POSTed to the endpoint the
// call names and signed as the webhooks are (src/webhooks/http.ts: the same headers, the HMAC keyed
// with the secret of the call's `webhook_id`), under the webhooks' SSRF rules (the URL checked when
// the call is placed, and every connection's addresses as it connects). Unlike an event it waits for
// the answer, which feeds the agent's next turn: at most the call's `tool_timeout_ms`, and its body
// is read up to 16 KiB. `checkTools` reads the call's tool fields when the call is placed.
import { request, type Agent } from 'undici';
import { ApiError, echo } from '../errors.ts';
import type { ToolDefinition } from '../providers/types.ts';
import { checkWebhookUrl, WebhookUrlError, type AddressPolicy } from '../webhooks/address.ts';
import { checkedAgent, classify, signedHeaders } from '../webhooks/http.ts';
import { eventBody, newEventId } from '../webhooks/records.ts';
import type { ToolStatus } from '../../machines/voice-call.machine.ts';

/** The `X-Service-Event` of a tool request. */
export const TOOL_EVENT = 'call.tool';
/** The most of an answer read (the rest is dropped). */
const MAX_ANSWER_BYTES = 16 * 1024;
export const DEFAULT_TOOL_TIMEOUT_MS = 4000;
export const MAX_TOOL_TIMEOUT_MS = 15_000;

/** The integrator's answer to one request. */
export interface ToolAnswer {
  status: ToolStatus;
  status_code: number | null;
  error: string | null;
  /** The answer's body as text (UTF-8, at most 16 KiB). */
  body: string;
  latency_ms: number;
}

/** A tool as the call declares it: OpenAI's function format, and the URL its calls go to (else the call's `tool_url`). */
export interface CallToolBody extends ToolDefinition {
  url?: string;
}

/** The tool fields of POST /v1/voice/call (src/voice/checks.ts's `VoiceCallBody`). */
export interface ToolFields {
  tools?: CallToolBody[];
  tool_url?: string;
  tool_timeout_ms?: number;
  tool_hold_message?: string;
  webhook_id?: number;
  agent?: { type: 'intent' | 'llm' | 'hybrid' };
}

/** Where requests of one kind go, and the secret that signs them (the call's webhook's, or the model's `signing_secret_env`'s). */
export interface ToolTarget {
  url: string;
  secret: string;
}

/** What a call's tools are, checked when it is placed (its live side's: src/voice/tools.ts). Holds the signing secrets: memory only. */
export interface ToolPlan {
  /** For the LLM (OpenAI's format, without the URLs): the call's tools, then its model's it does not replace. */
  definitions: ToolDefinition[];
  /** Each tool's URL and secret. */
  targets: Record<string, ToolTarget>;
  /** Where a pack's business actions go (the call's `tool_url`, else its model's `agent_tools.url`); null: they are recorded, not sent. */
  actions: ToolTarget | null;
  timeoutMs: number;
  /** The call's own holding line, else its model's; null: the pack's `GEN.HOLD`, else the gateway's. */
  holdText: string | null;
}

export class ToolRequests {
  private readonly agent: Agent;

  constructor(private readonly policy: AddressPolicy) {
    this.agent = checkedAgent(policy, MAX_TOOL_TIMEOUT_MS);
  }

  /** A URL a request may go to (the webhooks' rules), normalised; throws WebhookUrlError. */
  checkUrl(raw: string): string {
    return checkWebhookUrl(raw, this.policy).href;
  }

  /** POSTs `fields` (as an event body: `id`, `event`, `ts` first) signed with `secret`; never throws. */
  async post(url: string, secret: string, fields: Record<string, unknown>, timeoutMs: number, now: number): Promise<ToolAnswer> {
    const started = performance.now();
    const done = (status: ToolStatus, code: number | null, error: string | null, body = ''): ToolAnswer => ({
      status,
      status_code: code,
      error,
      body,
      latency_ms: Math.round(performance.now() - started),
    });
    const bytes = Buffer.from(eventBody(newEventId(now), TOOL_EVENT, Math.floor(now / 1000), fields), 'utf8');
    const signal = AbortSignal.timeout(timeoutMs);
    try {
      const target = checkWebhookUrl(url, this.policy);
      const res = await request(target, { method: 'POST', dispatcher: this.agent, signal, headers: signedHeaders(secret, TOOL_EVENT, bytes), body: bytes });
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= MAX_ANSWER_BYTES) break; // leaving the loop drops the rest
      }
      const body = Buffer.concat(chunks).subarray(0, MAX_ANSWER_BYTES).toString('utf8');
      const code = res.statusCode;
      if (code >= 200 && code < 300) return done('ok', code, null, body);
      return done(code >= 400 && code < 500 ? 'refused' : 'failed', code, `http_${code}`, body);
    } catch (err) {
      if (err instanceof WebhookUrlError) return done('failed', null, err.reason);
      return signal.aborted ? done('timeout', null, 'timeout') : done('failed', null, classify(err));
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** The calls' requests, as the voice service holds them (it checks their URLs, its calls send them, its close ends them). */
export type ToolRequester = Pick<ToolRequests, 'checkUrl' | 'post' | 'close'>;

/** What checking a call's tools needs: the URL rule, the call's webhook (its URL and secret), the model's secret by its env var. */
export interface ToolCheckDeps {
  toolRequests: ToolRequester;
  signerOf(account: string, webhookId: number): Promise<{ url: string; secret: string } | null>;
  /** The value of the environment variable `name` (a model's `agent_tools.signing_secret_env`), undefined when unset. */
  toolSecret(name: string): string | undefined;
}

/** A call's or a model's tools, checked: what a `ToolPlan` is made of. */
export type ToolSet = Pick<ToolPlan, 'definitions' | 'targets' | 'actions'>;

/**
 * The call's tools, its own and its model's (src/voice/model-tools.ts), merged: a call's tool
 * replaces its model's of the same name (decided: the integrator's declaration is the more
 * specific, as a call's `voicemail` or `record` overrides its model's), and the call's `tool_url`
 * takes the pack's actions before the model's `url`. Null: neither has any.
 */
export async function checkTools(
  deps: ToolCheckDeps,
  account: string,
  body: ToolFields,
  model: ToolSet | null,
  settings: ToolSettings,
): Promise<ToolPlan | null> {
  const own = await callTools(deps, account, body);
  if (!own && !model) return null;
  const targets = { ...model?.targets, ...own?.targets };
  const replaced = new Set(Object.keys(own?.targets ?? {}));
  return {
    definitions: [...(own?.definitions ?? []), ...(model?.definitions ?? []).filter((d) => !replaced.has(d.function.name))],
    targets,
    actions: own?.actions ?? model?.actions ?? null,
    timeoutMs: body.tool_timeout_ms ?? settings.timeoutMs,
    holdText: body.tool_hold_message ?? settings.holdText,
  };
}

/** The timeout and holding line when the call does not give its own (its model's, else the gateway's). */
export interface ToolSettings {
  timeoutMs: number;
  holdText: string | null;
}

/**
 * The call's own tools, checked: each name once, every URL one a webhook could have, and a `webhook_id`
 * whose secret signs them (the integrator verifies the requests as it verifies the call's events).
 * Null: the call has no tools and no `tool_url`.
 */
async function callTools(deps: ToolCheckDeps, account: string, body: ToolFields): Promise<ToolSet | null> {
  const tools = body.tools ?? [];
  if (tools.length === 0 && body.tool_url === undefined) return null;
  const agent = body.agent?.type ?? 'intent';
  if (tools.length > 0 && agent === 'intent') {
    throw new ApiError('invalid_request', "'tools' are an LLM's: give an llm or hybrid agent (a pack's actions go to 'tool_url').", { param: 'tools' });
  }
  const url = (raw: string, param: string): string => {
    try {
      return deps.toolRequests.checkUrl(raw);
    } catch (err) {
      if (err instanceof WebhookUrlError) throw new ApiError('invalid_request', `Invalid field '${param}': ${err.message}.`, { param });
      throw err;
    }
  };
  const actionUrl = body.tool_url === undefined ? null : url(body.tool_url, 'tool_url');
  const urls: Record<string, string> = {};
  for (const [i, t] of tools.entries()) {
    const name = t.function.name;
    if (Object.hasOwn(urls, name)) throw new ApiError('invalid_request', `Two tools are named '${echo(name)}'.`, { param: `tools[${i}].function.name` });
    if (t.url === undefined && actionUrl === null) {
      throw new ApiError('invalid_request', `The tool '${echo(name)}' has no 'url' and the call no 'tool_url'.`, { param: `tools[${i}].url` });
    }
    urls[name] = t.url === undefined ? actionUrl! : url(t.url, `tools[${i}].url`);
  }
  if (body.webhook_id === undefined) {
    throw new ApiError('invalid_request', "A call's tool requests are signed with its webhook's secret: give 'webhook_id'.", { param: 'webhook_id' });
  }
  const signer = await deps.signerOf(account, body.webhook_id);
  if (!signer) throw new ApiError('invalid_request', `'webhook_id' must be one of your account's webhooks, not ${body.webhook_id}.`, { param: 'webhook_id' });
  const secret = signer.secret;
  return {
    definitions: tools.map(({ url: _url, ...definition }) => definition),
    targets: Object.fromEntries(Object.entries(urls).map(([name, u]) => [name, { url: u, secret }])),
    actions: actionUrl === null ? null : { url: actionUrl, secret },
  };
}
