// Many keys for one account, fast: copies of a key the account made through the API, written
// straight into the store (10,000 API calls would take minutes and measure nothing). Each copy has
// its own id, jti, prefix and name (`<name> <i>`, the oldest first), a second apart in age.
import type { Store } from '../../src/store/port.ts';
import type { KeyDoc } from '../../src/identity/keys.ts';

export async function copyKeys(store: Store, userId: number, count: number, opts: { firstId: number; name: string; now: number }): Promise<number> {
  const keys = store.collection<KeyDoc>('api_keys');
  const template = await keys.findOne({ user_id: userId });
  if (!template) throw new Error(`user ${userId} has no key to copy`);
  let id = opts.firstId;
  for (let i = 0; i < count; i += 5000) {
    const docs = Array.from({ length: Math.min(5000, count - i) }, (_, j) => {
      const jti = (id++).toString(16).padStart(32, '0');
      return {
        ...template,
        _id: id - 1,
        jti,
        prefix: template.prefix.slice(0, -12) + jti.slice(-12),
        name: `${opts.name} ${i + j}`,
        created_at: new Date(opts.now - (count - i - j) * 1000),
      };
    });
    await keys.insertMany(docs);
  }
  await store.collection('counters').updateOne({ _id: 'api_keys' }, { $set: { seq: id } }, { upsert: true });
  return id;
}
