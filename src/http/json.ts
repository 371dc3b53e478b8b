// The JSON body parser: secure-json-parse (prototype-poisoning safe, as fastify's own) behind a
// nesting-depth check (src/shared/json-depth.ts). A deeply nested body is rejected before it is
// parsed, so it can neither burn CPU in the parser nor make a later JSON.stringify throw
// (SECURITY.md, "Hardening: stack defaults we override").
import sjson from 'secure-json-parse';
import { jsonDepthExceeds } from '../shared/json-depth.ts';
import { ApiError } from './errors.ts';

export function parseJsonBody(text: string, maxDepth: number): unknown {
  if (text.length === 0) throw new ApiError('invalid_json', 'Request body is empty; send a JSON document.');
  if (jsonDepthExceeds(text, maxDepth)) {
    throw new ApiError('invalid_json', `JSON body is nested deeper than ${maxDepth} levels.`);
  }
  try {
    return sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    throw new ApiError('invalid_json', `Request body is not valid JSON: ${(err as Error).message}`);
  }
}
