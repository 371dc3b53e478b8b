// The dashboard build: the account pages' JS and CSS stay under 30 KB gzip, and the operator pages
// are a separate bundle that only a dynamic import reaches (an account user never downloads it), as
// are the Campaigns pages (loaded the first time a campaigns address opens).
// Also keeps the UI's copies of the server's closed lists equal to the server's.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { DashboardBuild } from '../../scripts/build-dashboard.mjs';
import { dashboardBuild } from '../build.ts';
import {
  CALL_STATUSES as UI_CALL_STATUSES,
  MAX_UPLOAD_BYTES,
  RETRY_OUTCOMES,
  ROW_STATUSES as UI_ROW_STATUSES,
  SCOPES as UI_SCOPES,
  USAGE_GROUPS,
  WEBHOOK_EVENTS,
} from '../../src/dashboard/ui/constants.ts';
import type { Batch, BatchRow } from '../../src/dashboard/account/pages/campaign-types.ts';
import type { BatchObject, rowObject } from '../../src/voice/batches/views.ts';
import { ROW_STATUSES } from '../../src/voice/batches/rows.ts';
import { RETRYABLE } from '../../src/voice/batches/pacing.ts';
import { UPLOAD_LIMIT_BYTES } from '../../src/http/uploads.ts';
import { SCOPES } from '../../src/identity/keys.ts';
import { EVENT_NAMES } from '../../src/webhooks/records.ts';
import { CALL_STATUSES } from '../../machines/voice-call.machine.ts';

export const ACCOUNT_BUDGET_GZIP = 30 * 1024;

// The Campaigns pages' types of a batch and a row take the server's objects (checked by typecheck:
// a field renamed or retyped on the server fails it).
export const serverBatchFits = (b: BatchObject): Omit<Batch, 'calls'> => b;
export const serverRowFits = (r: ReturnType<typeof rowObject>): BatchRow => r;

/** The files a bundle loads before it runs: the entry and the chunks it imports statically. */
function staticClosure(build: DashboardBuild, entry: string): Set<string> {
  const out = new Set<string>();
  const visit = (name: string) => {
    if (out.has(name)) return;
    out.add(name);
    for (const i of build.files[name]?.imports ?? []) if (i.kind === 'import-statement') visit(i.path);
  };
  visit(entry);
  return out;
}

describe('dashboard bundle', () => {
  let dir: string;
  let build: DashboardBuild;
  let dispose: () => Promise<void>;
  before(async () => {
    ({ build, dispose } = await dashboardBuild());
    dir = build.outDir;
  });
  after(() => dispose());

  const gz = async (name: string) => gzipSync(await readFile(join(dir, 'assets', name)), { level: 9 }).length;

  it(`keeps the account pages' JS and CSS under ${ACCOUNT_BUDGET_GZIP / 1024} KB gzip`, async (t) => {
    const account = [...staticClosure(build, build.entry), build.css!];
    let total = 0;
    for (const f of account) total += await gz(f);
    assert.ok(total < ACCOUNT_BUDGET_GZIP, `account bundle is ${total} bytes gzip`);
    t.diagnostic(`account bundle: ${total} bytes gzip in ${account.length} files`);
    const html = await readFile(join(dir, 'index.html'), 'utf8');
    for (const f of account.filter((f) => f.endsWith('.js') && f !== build.entry)) assert.ok(!html.includes(f), 'chunks are imported by the entry, not listed');
  });

  /** The chunks only a dynamic import reaches, by the entry point they are built from. */
  const lazy = () => {
    const dynamic = new Set(Object.values(build.files).flatMap((f) => f.imports.filter((i) => i.kind === 'dynamic-import').map((i) => i.path)));
    return new Map([...dynamic].map((name) => [build.files[name]?.entry ?? name, name]));
  };

  it('puts the operator pages in a separate bundle reached only by a dynamic import', async () => {
    const account = staticClosure(build, build.entry);
    const chunks = lazy();
    assert.deepEqual([...chunks.keys()].sort(), ['src/dashboard/account/pages/campaigns-routes.tsx', 'src/dashboard/operator/operator.tsx']);
    const operator = chunks.get('src/dashboard/operator/operator.tsx')!;
    assert.ok(!account.has(operator));
    const operatorCode = await readFile(join(dir, 'assets', operator), 'utf8');
    assert.match(operatorCode, /\/admin\/models/);
    for (const f of account) assert.ok(!(await readFile(join(dir, 'assets', f), 'utf8')).includes('/admin/models'), `${f} holds no operator page`);
  });

  it('puts the Campaigns pages in a chunk of their own, loaded when a campaigns address first opens', async (t) => {
    const account = staticClosure(build, build.entry);
    const campaigns = lazy().get('src/dashboard/account/pages/campaigns-routes.tsx')!;
    assert.ok(!account.has(campaigns));
    assert.match(await readFile(join(dir, 'assets', campaigns), 'utf8'), /\/portal\/voice\/batches\/estimate/);
    for (const f of account) assert.ok(!(await readFile(join(dir, 'assets', f), 'utf8')).includes('/portal/voice/batches'), `${f} holds no campaign page`);
    t.diagnostic(`campaigns chunk: ${await gz(campaigns)} bytes gzip`);
  });

  it("keeps the UI's scopes, webhook events, usage groupings, call and batch row statuses, retried outcomes and upload limit equal to the server's", () => {
    assert.equal(MAX_UPLOAD_BYTES, UPLOAD_LIMIT_BYTES);
    assert.deepEqual([...UI_SCOPES], [...SCOPES]);
    assert.deepEqual([...WEBHOOK_EVENTS], [...EVENT_NAMES]);
    assert.deepEqual([...USAGE_GROUPS], ['day', 'model', 'key_prefix', 'member', 'end_user']);
    assert.deepEqual([...UI_CALL_STATUSES], [...CALL_STATUSES]);
    assert.deepEqual([...UI_ROW_STATUSES], [...ROW_STATUSES]);
    assert.deepEqual([...RETRY_OUTCOMES], [...RETRYABLE]);
  });
});
