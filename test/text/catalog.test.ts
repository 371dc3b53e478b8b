// The model catalog against the embedded store: what start-up does to models stored by older versions.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ModelCatalog } from '../../src/models/catalog.ts';
import { PROVIDER_NAMES } from '../../src/providers/index.ts';
import { openTestStore, tempDir } from '../actors/helpers.ts';

describe('model catalog start-up', () => {
  it('gives a revision to models stored before revisions existed, and leaves the others alone', async (t) => {
    const { dir, remove } = tempDir();
    t.after(remove);
    const store = await openTestStore(dir);
    t.after(() => store.close());
    const models = store.collection<{ _id: string; revision?: string }>('models');
    const at = new Date();
    const route = { provider: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key: 'k', upstream_model: 'x' };
    await models.insertOne({ _id: 'old', type: 'llm', routes: [route], created_at: at, updated_at: at } as never);
    await models.insertOne({ _id: 'new', type: 'llm', routes: [route], created_at: at, updated_at: at, revision: 'r1' } as never);
    await new ModelCatalog(store, PROVIDER_NAMES, () => Date.now()).seed([]);
    assert.match((await models.findOne({ _id: 'old' }))!.revision ?? '', /^[0-9a-f]{16}$/);
    assert.equal((await models.findOne({ _id: 'new' }))!.revision, 'r1');
  });
});
