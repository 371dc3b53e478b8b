// Operator management of intent packs: PUT stores a new version (validated, and trained once to
// prove it trains) that every instance uses from its next request; GET lists them or shows one;
// POST .../evaluate scores the live pack, or a candidate version before it is stored, on labelled
// turns (src/intent/evaluate.ts), since a stored version is live at once.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireAdmin } from '../auth.ts';
import { ApiError } from '../errors.ts';
import { Closed, errors, FreeText, KeyString } from '../schemas.ts';
import { PackError, validatePack } from '../../intent/pack.ts';
import { CompiledPack } from '../../intent/engine.ts';
import { OUT_OF_SCOPE, scoreTurns, summarize } from '../../intent/evaluate.ts';

const PackId = Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,63}$' });

export function registerAdminIntentRoutes(app: App, deps: AppDeps): void {
  const { intentPacks } = deps.services;
  const base = { preHandler: requireAdmin(deps) };
  const tags = ['admin'];
  const security = [{ admin: [] }];
  const Any = Type.Object({}, { additionalProperties: true });
  // The same, for what a request sends: typed as a record (TypeBox types an empty open Object as
  // `object`, whose fields cannot be read); Unsafe names only the static type, the JSON schema is Any's.
  const AnyInput = Type.Unsafe<Record<string, unknown>>(Any);

  app.put(
    '/admin/intent-packs/:id',
    {
      ...base,
      // Big packs are allowed (examples); the body is validated by validatePack, which names the bad field.
      bodyLimit: deps.config.http.inferenceBodyLimitBytes * 16,
      schema: {
        tags,
        security,
        summary: 'Create or replace an intent pack (a new version takes effect on the next request)',
        params: Closed({ id: PackId }),
        body: AnyInput,
        response: { 200: Any, 201: Any, ...errors(400, 401, 403) },
      },
    },
    async (req, reply) => {
      const body = req.body;
      if (body.id !== undefined && body.id !== req.params.id) {
        throw new ApiError('invalid_request', `The pack's id '${String(body.id)}' differs from the path's '${req.params.id}'.`, { param: 'id' });
      }
      try {
        const { pack, created } = await intentPacks.put({ ...body, id: req.params.id });
        return reply.code(created ? 201 : 200).send(pack);
      } catch (err) {
        if (err instanceof PackError) throw new ApiError('invalid_request', err.message, { param: err.path || 'body' });
        throw err;
      }
    },
  );

  const LabelledTurn = Closed({
    text: FreeText(4000, { minLength: 1 }),
    /** An intent id of the pack, or OUT_OF_SCOPE for a turn it should not act on. */
    expected: KeyString(200, { minLength: 1 }),
    group: Type.Optional(KeyString(64, { minLength: 1 })),
  });
  app.post(
    '/admin/intent-packs/:id/evaluate',
    {
      ...base,
      bodyLimit: deps.config.http.inferenceBodyLimitBytes * 16,
      schema: {
        tags,
        security,
        summary: 'Score the live pack, or a candidate version of it (not stored), on labelled turns',
        params: Closed({ id: PackId }),
        body: Closed({ pack: Type.Optional(AnyInput), turns: Type.Array(LabelledTurn, { minItems: 1, maxItems: 5000 }) }),
        response: { 200: Any, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const { id } = req.params;
      let pack: CompiledPack | null;
      if (req.body.pack !== undefined) {
        const raw = req.body.pack;
        if (raw.id !== undefined && raw.id !== id)
          throw new ApiError('invalid_request', `The pack's id '${String(raw.id)}' differs from the path's '${id}'.`, { param: 'pack.id' });
        try {
          pack = new CompiledPack(validatePack({ ...raw, id }));
        } catch (err) {
          if (err instanceof PackError) throw new ApiError('invalid_request', err.message, { param: err.path ? `pack.${err.path}` : 'pack' });
          throw err;
        }
      } else {
        pack = await intentPacks.compiledPack(id);
        if (!pack) throw new ApiError('not_found', `No intent pack '${id}'.`);
      }
      const turns = req.body.turns.map((t, n) => {
        if (t.expected !== OUT_OF_SCOPE && !pack.intents.has(t.expected)) {
          throw new ApiError('invalid_request', `turns[${n}].expected '${t.expected}' is neither an intent of the pack nor ${OUT_OF_SCOPE}.`, {
            param: `turns[${n}].expected`,
          });
        }
        return { text: t.text, gold: t.expected, ...(t.group !== undefined ? { group: t.group } : {}) };
      });
      const scores = scoreTurns(pack, turns);
      const { p99_ms: _, ...summary } = summarize(scores);
      return {
        pack: { id, version: pack.pack.version, candidate: req.body.pack !== undefined },
        ...summary,
        results: scores.map((s) => ({
          text: s.text,
          expected: s.gold,
          ...(s.group !== undefined ? { group: s.group } : {}),
          outcome: s.outcome,
          classification: s.result.classification,
          intent: s.result.intent?.id ?? null,
          confidence: s.result.intent?.confidence ?? null,
          classifier_used: s.result.classifier_used,
        })),
      };
    },
  );

  app.get(
    '/admin/intent-packs',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Intent packs (id, version, revision, source)',
        response: { 200: Type.Object({ data: Type.Array(Any) }), ...errors(401, 403) },
      },
    },
    async () => ({
      data: await intentPacks.list(),
    }),
  );

  app.get(
    '/admin/intent-packs/:id',
    {
      ...base,
      schema: { tags, security, summary: 'One intent pack, in full', params: Closed({ id: PackId }), response: { 200: Any, ...errors(401, 403, 404) } },
    },
    async (req) => {
      const pack = await intentPacks.getRaw(req.params.id);
      if (!pack) throw new ApiError('not_found', `No intent pack '${req.params.id}'.`);
      return pack;
    },
  );
}
