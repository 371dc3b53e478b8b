// The MongoDB adapter: a thin layer over the official driver. Each method calls the driver's method
// of the same name with the same arguments; the only translations are the ones the port documents:
// duplicate-key errors become DuplicateKeyError, findOneAnd* return the document itself
// (`includeResultMetadata: false`) and `returnDocument` defaults to 'after'. Before each call the
// `_id`s it names are checked (key-strings.ts): MongoDB would store an unpaired surrogate as U+FFFD,
// so the document read back would not be the one written.

import type { Collection as DriverCollection, MongoClient } from 'mongodb';
import {
  DuplicateKeyError,
  indexName,
  type Collection,
  type DeleteResult,
  type Doc,
  type Filter,
  type FindOneAndUpdateOptions,
  type FindOptions,
  type Id,
  type IndexSpec,
  type Sort,
  type Store,
  type StoreChange,
  type Update,
  type UpdateOptions,
  type UpdateResult,
  type WriteOptions,
} from './port.ts';
import { checkIds, type NamedIds } from './key-strings.ts';

// The driver loads with this module, which src/store/index.ts imports only when a MongoDB URL is
// configured: a gateway on the embedded store never loads it (nor the bundle, where esbuild keeps
// this import dynamic).
const driver = await import('mongodb');

export async function openMongoStore(opts: { url: string; dbName?: string }): Promise<Store> {
  const client = new driver.MongoClient(opts.url);
  await client.connect();
  return mongoStoreOn(client, opts.dbName ?? dbNameFromUrl(opts.url) ?? 'gateway');
}

/** The store over a client the caller made (it connects on first use; `close` closes it). */
export function mongoStoreOn(client: MongoClient, dbName: string): Store {
  return new MongoStore(client, dbName);
}

/** The database named in the connection string's path (`mongodb://host/<db>?...`), if any. */
export function dbNameFromUrl(url: string): string | undefined {
  const match = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]*)/.exec(url);
  const name = match?.[1] ? decodeURIComponent(match[1]) : '';
  return name.length > 0 ? name : undefined;
}

class MongoStore implements Store {
  readonly kind = 'mongodb' as const;

  constructor(
    private readonly client: MongoClient,
    private readonly dbName: string,
  ) {}

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    return new MongoCollection<T>(this.client.db(this.dbName).collection<Doc>(name));
  }

  async ping(): Promise<void> {
    await this.client.db(this.dbName).command({ ping: 1 });
  }

  watch(collection: string, listener: (change: StoreChange) => void, onError: (err: unknown) => void): () => Promise<void> {
    const stream = this.client
      .db(this.dbName)
      .collection<Doc>(collection)
      .watch([{ $match: { operationType: { $in: ['insert', 'update'] } } }]);
    stream.on('change', (change) => {
      if (change.operationType === 'insert') listener({ op: 'insert', id: change.documentKey._id, doc: change.fullDocument });
      else if (change.operationType === 'update') listener({ op: 'update', id: change.documentKey._id });
    });
    stream.on('error', onError);
    return () => stream.close();
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

class MongoCollection<T extends Doc> implements Collection<T> {
  readonly name: string;

  constructor(private readonly c: DriverCollection<Doc>) {
    this.name = c.collectionName;
  }

  insertOne(doc: T, options: WriteOptions = {}): Promise<{ insertedId: Id }> {
    return this.call(async () => ({ insertedId: (await this.c.insertOne(doc, definedOnly(options))).insertedId }), { docs: [doc] });
  }

  insertMany(docs: T[], options: { ordered?: boolean } & WriteOptions = {}): Promise<{ insertedCount: number }> {
    return this.call(
      async () => ({ insertedCount: (await this.c.insertMany(docs, { ...definedOnly(options), ordered: options.ordered ?? true })).insertedCount }),
      { docs },
    );
  }

  findOne(filter: Filter, options: Omit<FindOptions, 'limit' | 'skip'> = {}): Promise<T | null> {
    return this.call(() => this.c.findOne(filter, definedOnly(options)) as Promise<T | null>, { filter });
  }

  find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    return this.call(() => this.c.find(filter, definedOnly(options)).toArray() as Promise<T[]>, { filter });
  }

  countDocuments(filter: Filter): Promise<number> {
    return this.call(() => this.c.countDocuments(filter), { filter });
  }

  updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.call(async () => updateResult(await this.c.updateOne(filter, update, definedOnly(options))), { filter, update });
  }

  updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    return this.call(async () => updateResult(await this.c.updateMany(filter, update)), { filter, update });
  }

  findOneAndUpdate(filter: Filter, update: Update, options: FindOneAndUpdateOptions = {}): Promise<T | null> {
    return this.call(
      () =>
        this.c.findOneAndUpdate(filter, update, {
          ...definedOnly(options),
          returnDocument: options.returnDocument ?? 'after',
          includeResultMetadata: false,
        }) as Promise<T | null>,
      { filter, update },
    );
  }

  replaceOne(filter: Filter, doc: T, options: UpdateOptions = {}): Promise<UpdateResult> {
    return this.call(async () => updateResult(await this.c.replaceOne(filter, doc, definedOnly(options))), { filter, docs: [doc] });
  }

  deleteOne(filter: Filter, options: WriteOptions = {}): Promise<DeleteResult> {
    return this.call(async () => ({ deletedCount: (await this.c.deleteOne(filter, definedOnly(options))).deletedCount }), { filter });
  }

  deleteMany(filter: Filter): Promise<DeleteResult> {
    return this.call(async () => ({ deletedCount: (await this.c.deleteMany(filter)).deletedCount }), { filter });
  }

  findOneAndDelete(filter: Filter, options: { sort?: Sort } & WriteOptions = {}): Promise<T | null> {
    return this.call(() => this.c.findOneAndDelete(filter, { ...definedOnly(options), includeResultMetadata: false }) as Promise<T | null>, { filter });
  }

  createIndex(spec: IndexSpec): Promise<string> {
    const { unique, sparse, expireAfterSeconds } = spec;
    return this.call(() => this.c.createIndex(spec.keys, definedOnly({ name: indexName(spec), unique, sparse, expireAfterSeconds })));
  }

  /**
   * Runs a driver call once the `_id`s it names are checked (InvalidKeyError, as a rejection),
   * turning MongoDB's duplicate-key error (code 11000) into the port's.
   */
  private async call<R>(op: () => Promise<R>, named: NamedIds = {}): Promise<R> {
    try {
      checkIds(this.name, named);
      return await op();
    } catch (err) {
      if (err instanceof driver.MongoServerError && err.code === 11000) {
        const dup = new DuplicateKeyError(this.name, /index: (\S+)/.exec(err.message)?.[1] ?? 'unknown');
        // insertMany: the driver's MongoBulkWriteError says how many documents went in.
        if (err instanceof driver.MongoBulkWriteError) dup.insertedCount = err.insertedCount;
        throw dup;
      }
      throw err;
    }
  }
}

function updateResult(r: { matchedCount: number; modifiedCount: number; upsertedId: unknown }): UpdateResult {
  return { matchedCount: r.matchedCount, modifiedCount: r.modifiedCount, upsertedId: (r.upsertedId ?? null) as Id | null };
}

/** Drops undefined options so the driver sends exactly what the caller set (e.g. no `unique: null`). */
function definedOnly<O extends object>(options: O): O {
  return Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as O;
}
