// Calls' recordings (issue 41 §3): this module owns the `voice_recordings` collection (one document
// per recorded call: its account, its state, its retention) and the recordings' files.
//
// - While the call goes on, its recorder (src/voice/recorder.ts) appends interleaved stereo PCM16
//   to a partial file, `DATA_DIR/recordings/<call id>.pcm`, every second.
// - When the call's actor finishes it (`finalize`, a step of its `finish` effect, src/voice/kind.ts),
//   the rest is written and the file becomes a WAV (its header written with the real size, the
//   bytes cut to whole stereo frames) stored through the blob port, atomically: a reader sees the
//   whole recording or none. Then the MP3 is encoded from it (ffmpeg) and stored beside it.
// - After kill -9 the restarted gateway finalizes the orphaned call the same way: the partial
//   file holds the recording up to the last second written before the crash, so it is kept; a
//   call whose partial file is gone (or empty) says it has no recording (`none`). A half-written
//   WAV is never served: the blob port stores nothing until the whole file is durable.
// - A recording is deleted (its blobs; the document stays, `deleted`) on DELETE, and by the sweep
//   once `expires_at` passed: the account's `recording_retention_days` (an operator's), else the
//   model's, else the calls' own retention (`voice.retentionDays`), counted from the call's end.
import { createReadStream } from 'node:fs';
import { type FileHandle, mkdir, open, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { BlobStore } from '../blobs/port.ts';
import { ApiError } from '../errors.ts';
import type { OrgRole } from '../identity/orgs.ts';
import { encodeAudio } from '../speech/ffmpeg.ts';
import { pcmWavHeader } from '../speech/wav.ts';
import type { Resamplers } from '../speech/resample.ts';
import type { Store } from '../store/port.ts';
import { CallRecorder } from './recorder.ts';

const RATE = 8000;
const BYTES_PER_SECOND = RATE * 2 * 2;
const SWEEP_EVERY_MS = 15 * 60_000;

export type RecordingState = 'recording' | 'ready' | 'none' | 'deleted';
export type RecordingFormat = 'wav' | 'mp3';

interface RecordingDoc {
  _id: string;
  account: string;
  model: string;
  state: RecordingState;
  retention_days: number;
  bytes: number;
  duration_ms: number;
  /** Set when the recording is stored (its end + retention); null while recording. */
  expires_at: Date | null;
  mp3: boolean;
  created_at: Date;
  [k: string]: unknown;
}

/** What a call's view says of its recording (null: the call was not recorded). */
export interface RecordingView {
  available: boolean;
  status: RecordingState;
  duration_seconds: number | null;
  /** The path to fetch it from (`?format=mp3` for the MP3). */
  url: string | null;
  /** Unix seconds: when the retention deletes it. */
  expires_at: number | null;
}

export interface RecordingsDeps {
  store: Store;
  blobs: BlobStore;
  /** Where partial files live (`DATA_DIR`). */
  dataDir: string;
  /** The account's own retention, an operator's (null: the model's, else `defaultRetentionDays`). */
  accountRetentionDays(account: string): Promise<number | null>;
  defaultRetentionDays: number;
  ffmpegPath?: string;
  /** The instance's resamplers (loaded once): a 16 or 24 kHz stream's agent channel is resampled to 8 kHz (src/voice/recorder.ts). */
  resamplers(): Promise<Resamplers>;
  logger: Logger;
  now(): number;
}

const wavKey = (callId: string) => `voice-recordings/${callId}/call.wav`;
const mp3Key = (callId: string) => `voice-recordings/${callId}/call.mp3`;

export class CallRecordings {
  private readonly docs;
  private readonly live = new Map<string, CallRecorder>();
  private readonly finalizing = new Map<string, Promise<void>>();
  private readonly encoding = new Map<string, Promise<boolean>>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(private readonly deps: RecordingsDeps) {
    this.docs = deps.store.collection<RecordingDoc>('voice_recordings');
  }

  private get dir(): string {
    return join(this.deps.dataDir, 'recordings');
  }

  private partial(callId: string): string {
    return join(this.dir, `${callId}.pcm`);
  }

  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    await this.docs.createIndex({ keys: { expires_at: 1 } });
  }

  /** Sweeps expired recordings now and every 15 minutes (stopped by `close`). */
  start(): void {
    const sweep = () => void this.sweep().catch((err: unknown) => this.deps.logger.warn({ err }, 'recording retention sweep failed'));
    sweep();
    this.sweeper = setInterval(sweep, SWEEP_EVERY_MS);
    this.sweeper.unref();
  }

  close(): void {
    if (this.sweeper) clearInterval(this.sweeper);
  }

  /** A recorded call is placed: its document (state `recording`) and its recorder, which starts with the stream. */
  async begin(call: { callId: string; account: string; model: string; modelRetentionDays?: number | undefined }): Promise<CallRecorder> {
    const days = (await this.deps.accountRetentionDays(call.account)) ?? call.modelRetentionDays ?? this.deps.defaultRetentionDays;
    const resamplers = await this.deps.resamplers();
    const now = new Date(this.deps.now());
    await this.docs.insertOne({
      _id: call.callId,
      account: call.account,
      model: call.model,
      state: 'recording',
      retention_days: days,
      bytes: 0,
      duration_ms: 0,
      expires_at: null,
      mp3: false,
      created_at: now,
    });
    const path = this.partial(call.callId);
    let file: Promise<FileHandle> | null = null;
    const recorder = new CallRecorder({
      append: async (bytes) => {
        file ??= open(path, 'a');
        await (await file).write(bytes);
      },
      done: async () => void (await (await file)?.close()),
      now: this.deps.now,
      log: this.deps.logger.child({ call_id: call.callId }),
      resamplers,
    });
    this.live.set(call.callId, recorder);
    return recorder;
  }

  /** The call could not be placed: its recording never was. */
  async abandon(callId: string): Promise<void> {
    await this.live.get(callId)?.close();
    this.live.delete(callId);
    await rm(this.partial(callId), { force: true });
    await this.docs.deleteOne({ _id: callId });
  }

  /**
   * The call ended (or was found orphaned after a restart): its recording is stored as WAV (and
   * MP3), or marked `none` when nothing was recorded. Idempotent: a replay finds it done.
   */
  finalize(callId: string): Promise<void> {
    let running = this.finalizing.get(callId);
    if (!running) {
      running = this.store(callId).finally(() => this.finalizing.delete(callId));
      this.finalizing.set(callId, running);
    }
    return running;
  }

  private async store(callId: string): Promise<void> {
    const recorder = this.live.get(callId);
    if (recorder) await recorder.close();
    this.live.delete(callId);
    const doc = await this.docs.findOne({ _id: callId });
    const path = this.partial(callId);
    if (doc?.state !== 'recording') {
      await rm(path, { force: true });
      return;
    }
    const size = (await stat(path).catch(() => null))?.size ?? 0;
    const bytes = size - (size % 4); // whole stereo frames: a crash may have cut the last one
    const ended = this.deps.now();
    if (bytes === 0) {
      await this.docs.updateOne({ _id: callId }, { $set: { state: 'none' } });
      await rm(path, { force: true });
      return;
    }
    await this.deps.blobs.put(wavKey(callId), wavFile(path, bytes));
    await this.docs.updateOne(
      { _id: callId, state: 'recording' },
      {
        $set: {
          state: 'ready',
          bytes,
          duration_ms: Math.round((bytes / BYTES_PER_SECOND) * 1000),
          expires_at: new Date(ended + doc.retention_days * 86_400_000),
        },
      },
    );
    await rm(path, { force: true });
    await this.mp3(callId).catch((err: unknown) => this.deps.logger.warn({ err, call_id: callId }, 'the recording was not encoded as MP3'));
  }

  /** The MP3 of a stored recording, encoded once from its WAV and kept beside it; false when there is no WAV. */
  private mp3(callId: string): Promise<boolean> {
    let running = this.encoding.get(callId);
    if (!running) {
      running = (async () => {
        if (await this.deps.blobs.stat(mp3Key(callId))) return true;
        const wav = await this.deps.blobs.get(wavKey(callId));
        if (!wav) return false;
        const output = ['-ac', '2', '-c:a', 'libmp3lame', '-b:a', '32k', '-f', 'mp3'];
        await this.deps.blobs.put(mp3Key(callId), encodeAudio(wav, { container: true }, { output, ...this.ffmpeg() }));
        await this.docs.updateOne({ _id: callId }, { $set: { mp3: true } });
        return true;
      })().finally(() => this.encoding.delete(callId));
      this.encoding.set(callId, running);
    }
    return running;
  }

  private ffmpeg(): { ffmpegPath?: string } {
    return this.deps.ffmpegPath ? { ffmpegPath: this.deps.ffmpegPath } : {};
  }

  /** What the call's view says of its recording; null when the call was not recorded. */
  async view(account: string, callId: string, prefix = '/v1'): Promise<RecordingView | null> {
    const doc = await this.docs.findOne({ _id: callId, account });
    return doc ? viewOf(doc, prefix) : null;
  }

  /** The blob to serve (the caller checked the call is the account's); 404 when there is none, 409 while the call records. */
  async blob(account: string, callId: string, format: RecordingFormat): Promise<{ key: string; contentType: string }> {
    const doc = await this.docs.findOne({ _id: callId, account });
    if (!doc || doc.state === 'none' || doc.state === 'deleted') {
      throw new ApiError(
        'not_found',
        doc ? `The call's recording is ${doc.state === 'none' ? 'empty: nothing was recorded' : 'deleted'}.` : 'The call was not recorded.',
      );
    }
    if (doc.state === 'recording') throw new ApiError('conflict', 'The call is still being recorded: its recording is stored when the call ends.');
    if (format === 'mp3' && !(await this.mp3(callId))) throw new ApiError('not_found', 'The recording is no longer stored.');
    return format === 'mp3' ? { key: mp3Key(callId), contentType: 'audio/mpeg' } : { key: wavKey(callId), contentType: 'audio/wav' };
  }

  /**
   * DELETE: the recording's files go; its document says `deleted`. 409 while the call records; 404
   * when there is none. An organization's member may not (403 `role_forbidden`): deleting what
   * happened on a call cannot be undone, so it is the owner's or an admin's, as the webhooks are.
   */
  async remove(account: string, callId: string, role: OrgRole | null): Promise<void> {
    if (role === 'member') throw new ApiError('role_forbidden', "Only the organization's owner or an admin can delete a call's recording.");
    const doc = await this.docs.findOne({ _id: callId, account });
    if (!doc || doc.state === 'deleted' || doc.state === 'none') throw new ApiError('not_found', 'The call has no recording.');
    if (doc.state === 'recording') throw new ApiError('conflict', 'The call is still being recorded: delete its recording once the call ended.');
    await this.erase(callId);
  }

  private async erase(callId: string): Promise<void> {
    await this.deps.blobs.delete(wavKey(callId));
    await this.deps.blobs.delete(mp3Key(callId));
    await this.docs.updateOne({ _id: callId }, { $set: { state: 'deleted', expires_at: null } });
  }

  /** Deletes the recordings whose retention ended; the number deleted. */
  async sweep(): Promise<number> {
    const due = await this.docs.find({ state: 'ready', expires_at: { $lte: new Date(this.deps.now()) } }, { limit: 500 });
    for (const doc of due) await this.erase(doc._id);
    if (due.length > 0) this.deps.logger.info({ deleted: due.length }, 'recordings past their retention deleted');
    return due.length;
  }

  /** The call's actor is deleted (its retention): its recording and document go with it. */
  async forget(callId: string): Promise<void> {
    await this.erase(callId);
    await this.docs.deleteOne({ _id: callId });
  }
}

function viewOf(doc: RecordingDoc, prefix: string): RecordingView {
  const ready = doc.state === 'ready';
  return {
    available: ready,
    status: doc.state,
    duration_seconds: ready ? doc.duration_ms / 1000 : null,
    url: ready ? `${prefix}/voice/calls/${doc._id}/recording` : null,
    expires_at: doc.expires_at ? Math.floor(doc.expires_at.getTime() / 1000) : null,
  };
}

/** The partial file's first `bytes` as a WAV file. */
async function* wavFile(path: string, bytes: number): AsyncGenerator<Uint8Array> {
  yield pcmWavHeader(bytes, RATE, 2);
  yield* createReadStream(path, { start: 0, end: bytes - 1 });
}
