// The dashboard: the built single-page app (scripts/build-dashboard.mjs) served from memory.
// index.html is answered for /dashboard and every /dashboard/* path that is not an asset (the app
// routes in the browser), never cached; hashed assets are immutable for a year. Every answer carries
// the strict CSP (no inline script or style), nosniff and no-referrer. The app itself calls only the
// /portal and /admin JSON endpoints, so there is one permission layer.
import { readdir, readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CONFIG_DIR } from '../../config.ts';
import type { App, AppDeps } from '../types.ts';
import { ApiError } from '../errors.ts';

export const DASHBOARD_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self'; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

interface Asset {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
}

interface Built {
  index: Asset;
  assets: Map<string, Asset>;
}

function asset(name: string, body: Buffer): Asset {
  const type = TYPES[extname(name)] ?? 'application/octet-stream';
  const zipped = body.length > 512 && !type.startsWith('image/png') && !type.startsWith('font/') ? gzipSync(body, { level: 9 }) : null;
  return { body, gzip: zipped && zipped.length < body.length ? zipped : null, type };
}

/** Whether Accept-Encoding lists gzip with a non-zero q (`gzip;q=0` refuses it); without it, identity. */
function acceptsGzip(header: string | undefined): boolean {
  return (header ?? '').split(',').some((part) => {
    const [coding, ...params] = part.split(';').map((p) => p.trim().toLowerCase());
    if (coding !== 'gzip') return false;
    const q = params.find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/** Reads the build into memory (a few tens of KB); null when it has not been built. */
async function load(dir: string): Promise<Built | null> {
  let index: Buffer;
  try {
    index = await readFile(join(dir, 'index.html'));
  } catch {
    return null;
  }
  const assets = new Map<string, Asset>();
  for (const name of await readdir(join(dir, 'assets')).catch(() => [] as string[])) {
    if (name.endsWith('.map')) continue;
    assets.set(name, asset(name, await readFile(join(dir, 'assets', name))));
  }
  return { index: asset('index.html', index), assets };
}

export function registerDashboardRoutes(app: App, deps: AppDeps): void {
  const dir = deps.config.dashboardDir ?? join(CONFIG_DIR, '..', 'dist', 'dashboard');
  let built: Promise<Built | null> | null = null;
  const current = async (): Promise<Built> => {
    built ??= load(dir);
    const b = await built;
    if (!b) {
      built = null; // not built yet: look again next time
      throw new ApiError('not_found', 'The dashboard is not built: run `npm run build` (npm start does).');
    }
    return b;
  };

  // The page's headers on these routes' answers, errors included (a route hook: no work added to
  // every other request).
  const onSend = async (_request: FastifyRequest, reply: FastifyReply) => {
    reply.header('content-security-policy', DASHBOARD_CSP);
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
  };

  const send = (request: FastifyRequest, reply: FastifyReply, a: Asset, cache: string) => {
    reply.header('cache-control', cache).header('vary', 'accept-encoding').type(a.type);
    const gz = a.gzip && acceptsGzip(request.headers['accept-encoding']);
    if (gz) reply.header('content-encoding', 'gzip');
    return reply.send(gz ? a.gzip : a.body);
  };
  const index = async (request: FastifyRequest, reply: FastifyReply) => send(request, reply, (await current()).index, 'no-store');
  const options = { schema: { hide: true }, onSend };

  app.get('/dashboard', options, index);
  app.get('/dashboard/*', options, index);
  app.get<{ Params: { name: string } }>('/dashboard/assets/:name', options, async (request, reply) => {
    const a = (await current()).assets.get(request.params.name);
    if (!a) throw new ApiError('not_found', `No dashboard asset ${request.params.name}.`);
    return send(request, reply, a, 'public, max-age=31536000, immutable');
  });
}
