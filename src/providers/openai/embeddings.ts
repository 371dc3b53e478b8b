// Embeddings against any OpenAI-compatible server. The answer is given in the encoding the client
// asked for even when the upstream ignored `encoding_format` (some servers only speak floats):
// base64 is little-endian float32, as OpenAI sends it.
import type { UpstreamHttp } from '../http.ts';
import { isObject, protocolError, tokenCount, type Json } from '../validate.ts';
import { embeddingsInputItems, type EmbeddingsCapability, type EmbeddingsRequest, type EmbeddingsResult } from '../types.ts';
import { openaiCall } from './call.ts';

export function openaiEmbeddings(http: UpstreamHttp): EmbeddingsCapability {
  return {
    async embed(route, req, signal) {
      const body: Json = { model: route.upstreamModel, input: req.input };
      if (req.encoding_format !== undefined) body.encoding_format = req.encoding_format;
      if (req.dimensions !== undefined) body.dimensions = req.dimensions;
      if (req.user !== undefined) body.user = req.user;
      const json = await http.postJson(openaiCall(route, '/embeddings', body, signal));
      return parseEmbeddings(route.id, req, json);
    },
  };
}

export function parseEmbeddings(routeId: string, req: EmbeddingsRequest, json: unknown): EmbeddingsResult {
  const expected = embeddingsInputItems(req.input).length;
  if (!isObject(json) || !Array.isArray(json.data) || json.data.length !== expected) {
    throw protocolError(routeId, `expected ${expected} embeddings`);
  }
  const wanted = req.encoding_format ?? 'float';
  const data: EmbeddingsResult['data'] = new Array(expected);
  json.data.forEach((item: unknown, i: number) => {
    if (!isObject(item)) throw protocolError(routeId, 'an embedding is not an object');
    const index = item.index ?? i;
    if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= expected || data[index]) {
      throw protocolError(routeId, 'embedding indexes are not 0..n-1');
    }
    data[index] = { index, embedding: convert(routeId, item.embedding, wanted) };
  });
  const promptTokens = isObject(json.usage) ? tokenCount(json.usage.prompt_tokens) : null;
  return { data, usage: promptTokens === null ? null : { prompt_tokens: promptTokens } };
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function convert(routeId: string, v: unknown, wanted: 'float' | 'base64'): number[] | string {
  if (Array.isArray(v)) {
    if (!v.every((x) => typeof x === 'number' && Number.isFinite(x))) throw protocolError(routeId, 'an embedding has a non-number');
    if (wanted === 'float') return v as number[];
    const buf = Buffer.alloc(v.length * 4);
    (v as number[]).forEach((x, i) => buf.writeFloatLE(x, i * 4));
    return buf.toString('base64');
  }
  if (typeof v === 'string' && BASE64.test(v)) {
    if (wanted === 'base64') return v;
    const buf = Buffer.from(v, 'base64');
    if (buf.length % 4 !== 0) throw protocolError(routeId, 'a base64 embedding is not float32');
    const out = new Array<number>(buf.length / 4);
    for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(i * 4);
    return out;
  }
  throw protocolError(routeId, 'an embedding is neither numbers nor base64');
}
