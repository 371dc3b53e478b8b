// A voice model's `agent_tools` (issue 41 §5), checked as the operator saves the model: each tool
// named once, each with somewhere to go (its `url`, else the declaration's), every URL absolute
// http(s). Whether an address may be reached (the webhooks' SSRF rules) and whether the signing
// secret's environment variable is set are checked as each call is placed (src/voice/model-tools.ts):
// the environment is the running gateway's, and a model saved before the variable is set is allowed.
import type { AgentTools } from '../shared/tool-schema.ts';

/** What is wrong with a model's `agent_tools` (the field, dotted as the catalog names fields, and why), or null. */
export function agentToolsProblem(a: AgentTools): { param: string; message: string } | null {
  const tools = a.tools ?? [];
  if (tools.length === 0 && a.url === undefined)
    return { param: 'agent_tools', message: "agent_tools needs 'tools', 'url' (where a pack's actions go), or both." };
  const urlProblem = (url: string, param: string) => {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { param, message: `${param} must be an absolute http(s) URL.` };
    }
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? null : { param, message: `${param} must be http or https.` };
  };
  if (a.url !== undefined) {
    const bad = urlProblem(a.url, 'agent_tools.url');
    if (bad) return bad;
  }
  const names = new Set<string>();
  for (const [i, t] of tools.entries()) {
    const at = `agent_tools.tools.${i}`;
    if (names.has(t.function.name)) return { param: `${at}.function.name`, message: `Two tools are named '${t.function.name}'.` };
    names.add(t.function.name);
    if (t.url === undefined && a.url === undefined) return { param: `${at}.url`, message: `The tool '${t.function.name}' has no url and agent_tools no url.` };
    const bad = t.url === undefined ? null : urlProblem(t.url, `${at}.url`);
    if (bad) return bad;
  }
  return null;
}
