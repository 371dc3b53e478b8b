// The request every OpenAI-compatible capability sends: `${base_url}${path}` (base_url includes the
// version, as in the OpenAI SDK: https://api.openai.com/v1, http://localhost:11434/v1) with a Bearer
// key when the route has one. Local servers (vLLM, Ollama, llama.cpp) often need none, so an empty
// key is not a misconfiguration here; the upstream's 401 says so when it is.
import { routeUrl, type UpstreamCall } from '../http.ts';
import type { ResolvedRoute } from '../types.ts';
import type { CancelSignal } from '../cancel.ts';

export function openaiCall(route: ResolvedRoute, path: string, body: unknown, signal: CancelSignal): UpstreamCall {
  const headers: Record<string, string> = {};
  if (route.apiKey) headers.authorization = `Bearer ${route.apiKey}`;
  return {
    routeId: route.id,
    url: routeUrl(route, path),
    headers,
    body,
    timeoutMs: route.timeoutMs,
    signal,
    secrets: route.apiKey ? [route.apiKey] : [],
  };
}
