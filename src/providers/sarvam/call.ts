// The request every Sarvam call sends: `${base_url}${path}` (base_url without a version, as in
// Sarvam's SDK: https://api.sarvam.ai) with the key in `api-subscription-key`. Sarvam needs a key.
// Uploads go through UpstreamFiles (FileCall); JSON calls (text to speech) through UpstreamHttp.
import { routeUrl, type UpstreamCall } from '../http.ts';
import type { CancelSignal } from '../cancel.ts';
import type { FileCall, Payload } from '../upload.ts';
import { UpstreamError, type ResolvedRoute } from '../types.ts';

function sarvamRequest(route: ResolvedRoute, path: string, signal: CancelSignal) {
  if (!route.apiKey) throw new UpstreamError('config', `route ${route.id} has no API key`, false);
  return {
    routeId: route.id,
    url: routeUrl(route, path),
    headers: { 'api-subscription-key': route.apiKey },
    timeoutMs: route.timeoutMs,
    signal,
    secrets: [route.apiKey],
  };
}

export function sarvamCall(route: ResolvedRoute, method: FileCall['method'], path: string, payload: Payload, signal: CancelSignal): FileCall {
  return { ...sarvamRequest(route, path, signal), method, payload };
}

export function sarvamJsonCall(route: ResolvedRoute, path: string, body: unknown, signal: CancelSignal): UpstreamCall {
  return { ...sarvamRequest(route, path, signal), body };
}
