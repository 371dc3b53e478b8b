// One gateway process per embedded data directory. The embedded store (its lazy writes, its TTL
// sweep), billing's sweeps of holds left by dead instances and the tmp area's sweep at start all
// assume that the process that opened DATA_DIR is the only one using it: a second gateway started
// on the same directory (a second `npm start`, a container started while the old one still runs)
// would write the same wallets from an overlay of its own and sweep the first's work.
//
// The lock is a Unix socket, DATA_DIR/gateway.sock, that the holder listens on: the kernel frees it
// with its process however that process ends (kill -9 included), so a socket file that no process
// answers on is stale and taken over, and one that answers names the live holder's pid. It works
// across processes and containers that share the directory on one host (LMDB itself is for one
// host). Several gateways in one process (tests) share the one lock. On MongoDB none is taken:
// instances share the database by design.
import { createConnection, createServer, type Server } from 'node:net';
import { realpathSync } from 'node:fs';
import { mkdir, unlink } from 'node:fs/promises';
import { join, relative } from 'node:path';

/** The Unix socket path limit (sun_path, 108 bytes on Linux, less the terminating NUL). */
const MAX_SOCKET_PATH = 107;

/** DATA_DIR cannot be taken: another live process holds it (or its path cannot hold the socket). */
export class DataDirLockError extends Error {
  override name = 'DataDirLockError';
}

export interface DataDirLock {
  /** Gives the lock up (the last holder in this process closes the socket). */
  release(): Promise<void>;
}

const held = new Map<string, { server: Server; refs: number }>();

/** Takes DATA_DIR for this process (creating it, 0700); throws DataDirLockError when another live process holds it. */
export async function lockDataDir(dir: string): Promise<DataDirLock> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const key = realpathSync(dir);
  let entry = held.get(key);
  if (!entry) {
    entry = { server: await listenOn(socketPath(key)), refs: 0 };
    held.set(key, entry);
  }
  entry.refs += 1;
  const taken = entry;
  let released = false;
  return {
    async release() {
      if (released) return;
      released = true;
      if (--taken.refs > 0) return;
      held.delete(key);
      await new Promise<void>((resolve) => taken.server.close(() => resolve()));
    },
  };
}

/** The socket's path: absolute, or relative to the working directory when only that fits the limit. */
function socketPath(dir: string): string {
  const path = join(dir, 'gateway.sock');
  if (Buffer.byteLength(path) <= MAX_SOCKET_PATH) return path;
  const rel = relative(process.cwd(), path);
  if (Buffer.byteLength(rel) <= MAX_SOCKET_PATH) return rel;
  throw new DataDirLockError(`DATA_DIR's path is too long for its lock socket (${path}): use a path under ${MAX_SOCKET_PATH - 12} bytes.`);
}

async function listenOn(path: string): Promise<Server> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const server = createServer((socket) => socket.end(JSON.stringify({ pid: process.pid })));
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
      server.once('error', resolve);
      server.listen(path, () => resolve(null));
    });
    if (!error) {
      server.unref(); // the lock never keeps the process alive
      return server;
    }
    if (error.code !== 'EADDRINUSE') throw error;
    const holder = await ask(path);
    if (holder !== null) {
      throw new DataDirLockError(
        `another gateway process (pid ${holder.pid ?? 'unknown'}) is using this DATA_DIR (${path}); the embedded store allows one process. Stop it first, or give this one a DATA_DIR of its own.`,
      );
    }
    await unlink(path).catch(() => undefined); // stale: its process is gone
  }
  throw new DataDirLockError(`could not take this DATA_DIR's lock (${path}): another process keeps taking it`);
}

/** What the process listening on `path` says (its pid), or null when none answers (a stale socket). */
function ask(path: string): Promise<{ pid?: number } | null> {
  return new Promise((resolve) => {
    const socket = createConnection(path);
    let text = '';
    const timer = setTimeout(() => finish({}), 2000); // something listens, but slowly: held all the same
    const finish = (answer: { pid?: number } | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (text += d));
    socket.on('end', () => {
      try {
        finish(JSON.parse(text) as { pid?: number });
      } catch {
        finish({});
      }
    });
    socket.on('error', (err: NodeJS.ErrnoException) => finish(err.code === 'ECONNREFUSED' || err.code === 'ENOENT' ? null : {}));
  });
}
