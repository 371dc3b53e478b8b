// What the speech-to-text provider tests share: a fake upstream, a receiver for provider
// callbacks, the upload client, the provider's capabilities, and WAV files in a temporary folder.
import { after, before } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UpstreamFiles } from '../../src/providers/upload.ts';
import type { Provider, TranscribeCapability, TranscribeRequest, TranscriptionJobCapability } from '../../src/providers/types.ts';
import { FakeServer, sendJson } from '../fakes/fake-server.ts';
import { wavInput } from '../fakes/audio.ts';

export interface SttHarness<U> {
  up: U;
  /** Answers 200 to every POST; its requests are the callbacks providers made. */
  receiver: FakeServer;
  files: UpstreamFiles;
  stt: TranscribeCapability;
  /** Absent for providers without a job API. */
  jobs: TranscriptionJobCapability | undefined;
  /** A request for `seconds` of fresh WAV audio (transcribe, segment timestamps unless overridden). */
  request(seconds: number, more?: Partial<TranscribeRequest>): TranscribeRequest;
}

/** Call inside a describe: starts everything before its tests and stops it after. */
export function sttHarness<U extends FakeServer>(start: () => Promise<U>, provider: (files: UpstreamFiles) => Provider): SttHarness<U> {
  let dir = '';
  const h = {
    request: (seconds: number, more: Partial<TranscribeRequest> = {}): TranscribeRequest => ({
      audio: wavInput(dir, seconds),
      mode: 'transcribe',
      timestamps: ['segment'],
      ...more,
    }),
  } as SttHarness<U>;
  before(async () => {
    h.up = await start();
    h.receiver = await FakeServer.start(async (x) => sendJson(x.res, 200, { ok: true }));
    h.files = new UpstreamFiles();
    const p = provider(h.files);
    h.stt = p.transcribe!;
    h.jobs = p.transcriptionJobs;
    dir = mkdtempSync(join(tmpdir(), 'stt-test-'));
  });
  after(async () => {
    await h.files.close();
    await h.up.close();
    await h.receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return h;
}
