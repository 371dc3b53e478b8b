// The request every Deepgram call sends: `POST ${base_url}/v1/listen?<query>` (base_url without a
// version, as in Deepgram's SDK: https://api.deepgram.com) with `Authorization: Token <key>` and
// the audio as the whole body, with its content type. Deepgram needs a key. Its errors are
// `{err_code, err_msg, request_id}`: `err_msg` is the explanation kept for the client.
import { routeUrl } from '../http.ts';
import type { CancelSignal } from '../cancel.ts';
import type { FileCall } from '../upload.ts';
import { isObject, parseJson } from '../validate.ts';
import { UpstreamError, type AudioInput, type ResolvedRoute } from '../types.ts';

export function listenCall(route: ResolvedRoute, query: URLSearchParams, audio: AudioInput, signal: CancelSignal): FileCall {
  if (!route.apiKey) throw new UpstreamError('config', `route ${route.id} has no API key`, false);
  // routeUrl's URL is shared between calls: the query goes on a copy.
  const url = new URL(routeUrl(route, '/v1/listen'));
  url.search = query.toString();
  return {
    routeId: route.id,
    url,
    headers: { authorization: `Token ${route.apiKey}` },
    timeoutMs: route.timeoutMs,
    signal,
    secrets: [route.apiKey],
    method: 'POST',
    payload: { type: 'file', path: audio.path, contentType: audio.contentType, data: audio.data },
    explain: deepgramExplanation,
  };
}

export function deepgramExplanation(body: string): string | undefined {
  try {
    const json = parseJson(body);
    return isObject(json) && typeof json.err_msg === 'string' ? json.err_msg : undefined;
  } catch {
    return undefined;
  }
}
