// The JSON nesting-depth scan, run before a JSON text is parsed: V8's parser takes seconds over a
// few MB of `[[[[…`, and a deeply nested value makes a later JSON.stringify throw. Linear, no
// allocation; the request bodies (src/http/json.ts) and upstream answers (src/providers/validate.ts)
// both pass through it.

/**
 * Whether a JSON text nests arrays/objects deeper than `limit` (brackets inside strings, escaped
 * quotes included, do not count). Stops at the first bracket past the limit; it does not return
 * the depth, and it does not check that the text is valid JSON (the parser that follows does).
 */
export function jsonDepthExceeds(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92 /* \ */)
        i++; // skip the escaped character
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 /* { */ || c === 91 /* [ */) {
      if (++depth > limit) return true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) depth--;
  }
  return false;
}
