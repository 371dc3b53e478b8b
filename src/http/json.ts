// The JSON body parser: secure-json-parse (prototype-poisoning safe, as fastify's own) behind a
// nesting-depth check. A deeply nested body is rejected before it is parsed, so it can neither
// burn CPU in the parser nor make a later JSON.stringify throw (SECURITY.md, "Hardening: stack
// defaults we override").
import sjson from 'secure-json-parse';
import { ApiError } from './errors.ts';

/** Returns the maximum nesting depth of arrays/objects in a JSON text, stopping early past `limit`. */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */) i++;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return false;
}

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
