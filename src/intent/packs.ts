// Intent packs in the store, and their compiled (trained) forms in memory.
//   intent_packs       {_id: pack id, version, rev, source: 'config'|'admin', intents, languages, updated_at}
//   intent_pack_bodies {_id: `${id}@${rev}`, body: JSON of the pack}
// Every request reads the small meta document (one point read), so a new version stored by an
// administrator on any instance is used from the next request on, with no restart; the compiled
// pack is cached per (id, rev) and compiled once however many requests wait for it.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { Collection, Doc, Store } from '../store/port.ts';
import { CompiledPack } from './engine.ts';
import { PackError, validatePack, type IntentPack } from './pack.ts';

interface PackMeta extends Doc {
  _id: string;
  version: number;
  rev: number;
  source: 'config' | 'admin';
  intents: number;
  languages: string[];
  updated_at: Date;
}

interface PackBody extends Doc {
  _id: string;
  body: string;
}

export interface PackSummary {
  id: string;
  version: number;
  rev: number;
  source: 'config' | 'admin';
  intents: number;
  languages: string[];
  updated_at: string;
}

const summary = (m: PackMeta): PackSummary => ({
  id: m._id,
  version: m.version,
  rev: m.rev,
  source: m.source,
  intents: m.intents,
  languages: m.languages,
  updated_at: m.updated_at.toISOString(),
});

/**
 * Compiled packs by the body stored, for every PackRegistry of the process: training is seeded, so
 * a body compiles to the same pack, and a compiled pack is read-only. A process holds one gateway in
 * production, where this changes nothing; a test process starts dozens, each of which trained the
 * demo pack again (0.3–0.4 s of CPU). The newest COMPILED_BODIES_KEPT bodies are kept.
 */
const compiledBodies = new Map<string, Promise<CompiledPack>>();
const COMPILED_BODIES_KEPT = 8;

function compileBody(body: string, compiled?: CompiledPack): Promise<CompiledPack> {
  const key = createHash('sha256').update(body).digest('base64');
  let pack = compiledBodies.get(key);
  compiledBodies.delete(key);
  pack ??= compiled ? Promise.resolve(compiled) : (async () => new CompiledPack(validatePack(JSON.parse(body))))();
  compiledBodies.set(key, pack);
  pack.catch(() => {
    if (compiledBodies.get(key) === pack) compiledBodies.delete(key);
  });
  for (const old of compiledBodies.keys()) {
    if (compiledBodies.size <= COMPILED_BODIES_KEPT) break;
    compiledBodies.delete(old);
  }
  return pack;
}

/** Reads and validates a pack file (config seeds and the evaluation); PackError names the file. */
export function readPackFile(path: string, baseDir = process.cwd()): IntentPack {
  const full = isAbsolute(path) ? path : resolve(baseDir, path);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(full, 'utf8'));
  } catch (err) {
    throw new PackError('', `cannot read ${full}: ${(err as Error).message}`);
  }
  try {
    return validatePack(raw);
  } catch (err) {
    if (err instanceof PackError) throw new PackError(err.path, `${full}: ${err.message.replace(/^intent pack: /, '')}`);
    throw err;
  }
}

export class PackRegistry {
  private readonly meta: Collection<PackMeta>;
  private readonly bodies: Collection<PackBody>;
  private readonly compiled = new Map<string, { rev: number; pack: Promise<CompiledPack> }>();

  constructor(
    store: Store,
    private readonly now: () => number,
  ) {
    this.meta = store.collection<PackMeta>('intent_packs');
    this.bodies = store.collection<PackBody>('intent_pack_bodies');
  }

  /**
   * Stores the packs shipped in config: created when absent, and replaced when the file carries a
   * higher version and the stored one also came from config (an administrator's upload wins).
   */
  async seed(packs: IntentPack[]): Promise<void> {
    for (const pack of packs) {
      const existing = await this.meta.findOne({ _id: pack.id });
      if (existing && (existing.source === 'admin' || existing.version >= pack.version)) continue;
      await this.write(pack, 'config', existing);
    }
  }

  /** An administrator's pack: validated, stored as a new revision. */
  async put(raw: unknown): Promise<{ pack: PackSummary; created: boolean }> {
    const pack = validatePack(raw);
    const existing = await this.meta.findOne({ _id: pack.id });
    // Compile before storing: a pack that cannot train is refused, not stored.
    const body = JSON.stringify(pack);
    void compileBody(body, new CompiledPack(pack));
    const meta = await this.write(pack, 'admin', existing, body);
    return { pack: summary(meta), created: !existing };
  }

  private async write(pack: IntentPack, source: PackMeta['source'], existing: PackMeta | null, body = JSON.stringify(pack)): Promise<PackMeta> {
    const rev = (existing?.rev ?? 0) + 1;
    await this.bodies.replaceOne({ _id: `${pack.id}@${rev}` }, { _id: `${pack.id}@${rev}`, body }, { upsert: true });
    const meta: PackMeta = {
      _id: pack.id,
      version: pack.version,
      rev,
      source,
      intents: pack.intents.length,
      languages: pack.languages,
      updated_at: new Date(this.now()),
    };
    if (existing) {
      // Conditional on the revision read: of two concurrent uploads, the later one retries.
      const r = await this.meta.replaceOne({ _id: pack.id, rev: existing.rev }, meta);
      if (r.matchedCount === 0) return this.write(pack, source, await this.meta.findOne({ _id: pack.id }), body);
    } else {
      try {
        await this.meta.insertOne(meta);
      } catch {
        return this.write(pack, source, await this.meta.findOne({ _id: pack.id }), body);
      }
    }
    if (existing) await this.bodies.deleteOne({ _id: `${pack.id}@${existing.rev}` }).catch(() => undefined);
    return meta;
  }

  async list(): Promise<PackSummary[]> {
    return (await this.meta.find({}, { sort: { _id: 1 }, limit: 10_000 })).map(summary);
  }

  async getRaw(id: string): Promise<IntentPack | null> {
    const m = await this.meta.findOne({ _id: id });
    if (!m) return null;
    const body = await this.bodies.findOne({ _id: `${id}@${m.rev}` });
    return body ? (JSON.parse(body.body) as IntentPack) : null;
  }

  /** The compiled current revision of a pack, or null when there is no such pack. */
  async compiledPack(id: string): Promise<CompiledPack | null> {
    const m = await this.meta.findOne({ _id: id });
    if (!m) return null;
    const cached = this.compiled.get(id);
    if (cached && cached.rev === m.rev) return cached.pack;
    const pack = (async () => {
      const body = await this.bodies.findOne({ _id: `${id}@${m.rev}` });
      if (!body) throw new Error(`intent pack ${id} revision ${m.rev} has no body`);
      return compileBody(body.body);
    })();
    this.compiled.set(id, { rev: m.rev, pack });
    pack.catch(() => {
      if (this.compiled.get(id)?.pack === pack) this.compiled.delete(id);
    });
    return pack;
  }
}
