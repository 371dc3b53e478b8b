// Shared pieces of the actor runtime tests: the probe kind with injectable work, a store in a
// temp dir, a log capture and a poll helper.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino, type Logger } from 'pino';
import { fromPromise } from 'xstate';
import type { ActorKind } from '../../src/actors/runtime.ts';
import { openEmbeddedStore } from '../../src/store/embedded/store.ts';
import type { Store } from '../../src/store/port.ts';
import { probeMachine, version, type WorkInput } from './probe.machine.ts';

export type Work = (input: WorkInput) => Promise<string>;

/** Never settles: work that is still in flight when the process dies or the test ends. */
export const hang: Work = () => new Promise<string>(() => {});

export function probeKind(work: Work, extra: Partial<ActorKind<typeof probeMachine>> = {}): ActorKind<typeof probeMachine> {
  return {
    kind: 'probe',
    machine: probeMachine,
    version,
    provide: () => ({ actors: { work: fromPromise<string, WorkInput>(({ input }) => work(input)) } }),
    ...extra,
  };
}

export function tempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'actors-test-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The real, durable embedded store (LMDB + mingo). */
export function openTestStore(dir: string): Promise<Store> {
  return openEmbeddedStore({ dir });
}

export interface CapturedLogs {
  logger: Logger;
  lines: Array<Record<string, unknown>>;
}

export function captureLogs(): CapturedLogs {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

export const silent: Logger = pino({ level: 'silent' });

/** Polls `check` until it returns a value other than undefined/false, or fails after `ms`. */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, ms = 3000): Promise<Exclude<T, undefined | false>> {
  const giveUpAt = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value as Exclude<T, undefined | false>;
    if (Date.now() > giveUpAt) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
