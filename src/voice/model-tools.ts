// A voice model's tools (its `agent_tools`, issue 41 §5: the operator's), made ready for a call as
// it is placed: the tools are offered to the call's LLM agent (an llm or hybrid one; an intent
// agent has nothing to call them), and the model's `url` takes its pack's business actions when
// the call names no `tool_url` of its own. Every request is signed with the secret in the
// environment variable the model names (`signing_secret_env`, read now: a rotated secret counts
// from the next call), with the webhooks' scheme; the secret is never stored or logged. A URL the
// webhooks' rules refuse, or the variable unset, is the operator's to fix: the call is refused
// 503 `model_misconfigured`, saying which field, never the secret.
import { ApiError } from '../errors.ts';
import type { ModelFields } from '../models/types.ts';
import { WebhookUrlError } from '../webhooks/address.ts';
import type { ToolCheckDeps, ToolSet, ToolSettings } from './tool-requests.ts';

type Agent = 'intent' | 'llm' | 'hybrid';

/** The model's tools for a call with `agent` (null: none apply), or the model_misconfigured error. */
export function modelTools(deps: Pick<ToolCheckDeps, 'toolRequests' | 'toolSecret'>, model: ModelFields & { _id: string }, agent: Agent): ToolSet | null {
  const declared = model.agent_tools;
  if (!declared) return null;
  const tools = agent === 'intent' ? [] : (declared.tools ?? []);
  if (tools.length === 0 && declared.url === undefined) return null;
  const misconfigured = (why: string) => new ApiError('model_misconfigured', `The model '${model._id}' ${why}; an operator must fix it.`);
  const secret = deps.toolSecret(declared.signing_secret_env);
  if (!secret) throw misconfigured("signs its agent_tools' requests with an environment variable that is not set in the gateway");
  const checked = (raw: string, field: string): string => {
    try {
      return deps.toolRequests.checkUrl(raw);
    } catch (err) {
      if (err instanceof WebhookUrlError) throw misconfigured(`has a tool URL (${field}) the gateway may not call: ${err.message}`);
      throw err;
    }
  };
  const url = declared.url === undefined ? null : checked(declared.url, 'agent_tools.url');
  return {
    definitions: tools.map(({ url: _url, ...definition }) => definition),
    targets: Object.fromEntries(
      tools.map((t, i) => [t.function.name, { url: t.url === undefined ? url! : checked(t.url, `agent_tools.tools.${i}.url`), secret }]),
    ),
    actions: url === null ? null : { url, secret },
  };
}

/** A call's tool timeout and holding line when it gives none: its model's, else the gateway's timeout and no line of its own. */
export function modelToolSettings(model: ModelFields, defaultTimeoutMs: number): ToolSettings {
  return { timeoutMs: model.agent_tools?.timeout_ms ?? defaultTimeoutMs, holdText: model.agent_tools?.hold_message ?? null };
}
