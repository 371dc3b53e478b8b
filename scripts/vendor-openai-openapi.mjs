#!/usr/bin/env node
// Writes test/fixtures/openai-openapi/openapi.json, the part of OpenAI's official OpenAPI document
// (github.com/openai/openai-openapi, openapi.json) that the conformance suite
// (test/conformance/openai.test.ts) validates against: the operations the gateway serves under
// /v1, their request bodies (test/conformance/openapi-document.test.ts compares ours with them),
// their 200 and 429 answers, the realtime server events, and every schema those reach. The
// schemas are copied as they are, less their prose (description, title, examples, x-oaiMeta:
// nothing a validator reads), so the fixture stays small enough to review in a diff.
//
//   node scripts/vendor-openai-openapi.mjs <openapi.json> <commit> [<commit date>]
import { readFileSync, writeFileSync } from 'node:fs';

const [source, commit, date] = process.argv.slice(2);
if (!source || !/^[0-9a-f]{40}$/.test(commit ?? '')) {
  process.stderr.write('usage: node scripts/vendor-openai-openapi.mjs <openapi.json> <40-hex commit> [<commit date>]\n');
  process.exit(2);
}
const doc = JSON.parse(readFileSync(source, 'utf8'));

/** The operations served under /v1 (path in the document → methods). */
const OPERATIONS = {
  '/models': ['get'],
  '/models/{model}': ['get'],
  '/chat/completions': ['post'],
  '/responses': ['post'],
  '/embeddings': ['post'],
  '/audio/transcriptions': ['post'],
  '/audio/translations': ['post'],
  '/audio/speech': ['post'],
};
/** Schemas the operations do not name: the realtime socket's server events (GA, and beta where GA has none), the error body. */
const EXTRA_ROOTS = Object.keys(doc.components.schemas).filter(
  (n) => n === 'RealtimeServerEvent' || /^Realtime(Beta)?ServerEvent[A-Z]/.test(n) || n === 'ErrorResponse',
);

const PROSE = new Set(['description', 'title', 'example', 'examples', 'x-oaiMeta']);
/** The value without its prose keywords; a `properties` map keeps every name (a property may be called `description`). */
const strip = (v) => {
  if (Array.isArray(v)) return v.map(strip);
  if (v === null || typeof v !== 'object') return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === 'properties') out[k] = Object.fromEntries(Object.entries(x).map(([name, s]) => [name, strip(s)]));
    else if (!PROSE.has(k)) out[k] = strip(x);
  }
  return out;
};

const schemas = {};
const responses = {};
const reach = (v) => {
  if (Array.isArray(v)) return v.forEach(reach);
  if (v === null || typeof v !== 'object') return;
  for (const [k, x] of Object.entries(v)) {
    if (k === '$ref' && typeof x === 'string') {
      const [, , kind, name] = x.split('/');
      const table = kind === 'schemas' ? schemas : kind === 'responses' ? responses : null;
      if (!table) throw new Error(`unexpected $ref ${x}`);
      if (!(name in table)) {
        const target = doc.components[kind][name];
        if (!target) throw new Error(`dangling $ref ${x}`);
        table[name] = strip(target);
        reach(target);
      }
    } else reach(x);
  }
};

const paths = {};
for (const [path, methods] of Object.entries(OPERATIONS)) {
  for (const method of methods) {
    const op = doc.paths[path]?.[method];
    if (!op) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
    const kept = Object.fromEntries(Object.entries(op.responses).filter(([status]) => status === '200' || status === '429'));
    const requestBody = op.requestBody ? { requestBody: strip(op.requestBody) } : {};
    paths[path] = { ...paths[path], [method]: { operationId: op.operationId, ...requestBody, responses: strip(kept) } };
    reach(kept);
    reach(op.requestBody);
  }
}
for (const name of EXTRA_ROOTS) {
  schemas[name] = strip(doc.components.schemas[name]);
  reach(doc.components.schemas[name]);
}

const sorted = (o) =>
  Object.fromEntries(
    Object.keys(o)
      .sort()
      .map((k) => [k, o[k]]),
  );
const out = {
  openapi: doc.openapi,
  info: { title: doc.info.title, version: doc.info.version, license: doc.info.license },
  'x-vendored': {
    from: 'https://github.com/openai/openai-openapi/blob/' + commit + '/openapi.json',
    ...(date ? { commit_date: date } : {}),
    by: 'scripts/vendor-openai-openapi.mjs',
  },
  paths,
  components: { responses: sorted(responses), schemas: sorted(schemas) },
};
const target = new URL('../test/fixtures/openai-openapi/openapi.json', import.meta.url);
writeFileSync(target, `${JSON.stringify(out, null, 1)}\n`);
process.stdout.write(`${Object.keys(schemas).length} schemas, ${Object.keys(paths).length} paths, version ${doc.info.version} → ${target.pathname}\n`);
