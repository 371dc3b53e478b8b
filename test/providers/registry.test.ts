// The speech-to-text providers in the registry: their capabilities, routes naming them accepted by
// the model catalog and route resolution, and a route whose provider lacks a capability treated
// as misconfigured by the router, never called.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ModelCatalog } from '../../src/models/catalog.ts';
import { UpstreamHttp } from '../../src/providers/http.ts';
import { createProviders, PROVIDER_NAMES } from '../../src/providers/index.ts';
import { UpstreamRouter } from '../../src/providers/router.ts';
import { RouterError } from '../../src/providers/router-error.ts';
import { resolveRoutes } from '../../src/providers/routes.ts';
import { UpstreamFiles } from '../../src/providers/upload.ts';
import { openTestStore, tempDir } from '../actors/helpers.ts';
import { never, USER } from './helpers.ts';

const stt = (provider: string) => ({
  type: 'stt' as const,
  owned_by: 'o',
  pricing: { cents_per_minute: 1 },
  routes: [{ provider, base_url: `https://api.${provider}.example`, api_key: 'k', upstream_model: 'm' }],
});

describe('speech-to-text providers in the registry', () => {
  it('registers sarvam and deepgram with sync and job transcription, OpenAI with sync transcription; speech on openai, sarvam, elevenlabs and local', async () => {
    const http = new UpstreamHttp();
    const files = new UpstreamFiles();
    try {
      const providers = createProviders(http, { files });
      assert.deepEqual(PROVIDER_NAMES, ['openai', 'anthropic', 'sarvam', 'deepgram', 'elevenlabs', 'local', 'simulator', 'twilio', 'exotel']);
      const has = (name: (typeof PROVIDER_NAMES)[number]) => {
        const p = providers.get(name)!;
        return [p.chat, p.embeddings, p.transcribe, p.transcriptionJobs, p.speak].map(Boolean);
      };
      assert.deepEqual(has('openai'), [true, true, true, false, true]);
      assert.deepEqual(has('anthropic'), [true, false, false, false, false]);
      assert.deepEqual(has('sarvam'), [false, false, true, true, true]);
      assert.deepEqual(has('deepgram'), [false, false, true, true, false]);
      assert.deepEqual(has('elevenlabs'), [false, false, false, false, true]);
      assert.deepEqual(has('local'), [false, false, true, false, true], 'the offline engines: sync transcription (jobs run inline) and speech');
      for (const carrier of ['simulator', 'twilio', 'exotel'] as const)
        assert.deepEqual(has(carrier), [false, false, false, false, false], 'carriers serve voice calls only (src/voice/)');
    } finally {
      await files.close();
      await http.close();
    }
  });

  it('lets an administrator route stt models to sarvam and deepgram, and still refuses unknown providers', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    const store = await openTestStore(dir);
    t.after(() => store.close());
    const catalog = new ModelCatalog(store, PROVIDER_NAMES, () => Date.now());
    for (const provider of ['sarvam', 'deepgram']) {
      const { model } = await catalog.put(`stt-${provider}`, stt(provider));
      assert.equal(resolveRoutes(model._id, model.routes, {})[0]!.problem, undefined);
    }
    await assert.rejects(catalog.put('stt-x', stt('assemblyai')), (err: Error & { options?: { param?: string } }) => {
      assert.equal(err.options?.param, 'routes.0.provider');
      assert.match(err.message, /known: openai, anthropic, sarvam, deepgram/);
      return true;
    });
  });

  it('treats a chat request routed to a speech-only provider as misconfigured, without calling it', async () => {
    const http = new UpstreamHttp();
    const router = new UpstreamRouter(createProviders(http));
    try {
      const routes = resolveRoutes('llm-x', [{ provider: 'sarvam', base_url: 'http://127.0.0.1:9', api_key: 'k', upstream_model: 'saaras:v3' }], {});
      await assert.rejects(router.complete(routes, { messages: [USER('hi')] }, never), (err: unknown) => {
        assert.ok(err instanceof RouterError);
        assert.equal(err.code, 'model_misconfigured');
        assert.deepEqual(err.attempts, [{ route: 'llm-x#0', outcome: 'config' }]);
        return true;
      });
    } finally {
      await router.close();
      await http.close();
    }
  });
});
