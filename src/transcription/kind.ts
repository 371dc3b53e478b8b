// The transcription-job actor kind: the machine (machines/transcription-job.machine.ts) with its
// effects bound to the blob store, the router and the Meter. Every side effect that must happen
// once is a step (`ctx.steps.once`, keyed by job and step name), so a replay after a crash or a
// takeover finds it done:
//   create:<route>, start:<route>  a two-phase provider's job made (its id recorded first), then
//                   given the audio and started (skipped by the provider when already started), or
//   submit:<route>  the recording handed to a provider's job API (its job id recorded), or
//   inline:<route>  transcribed in one call (the offline engine, or a provider without jobs),
//                   its transcript stored as `jobs/<id>/raw.json`
//   fetch           a finished provider job's transcript stored the same way
//   result          the client's transcript (speakers SPEAKER_NN) stored as `jobs/<id>/result.json`
//   charge          the hold settled for the decoded seconds (or, on failure, `release`d)
//   notify          the transcription.completed / .failed event
import { fromPromise } from 'xstate';
import type { ActorKind, ActorKindContext } from '../actors/kinds.ts';
import type { BlobStore } from '../blobs/port.ts';
import type { Hold, Payer } from '../billing/types.ts';
import type { Meter } from '../metering/meter.ts';
import type { ModelCatalog } from '../models/catalog.ts';
import type { ModelDoc, SttMode } from '../models/types.ts';
import type { EventSink } from '../shared/events.ts';
import type {
  Provider,
  ResolvedRoute,
  TranscribeCapability,
  TranscribeRequest,
  TranscriptionJobCapability,
  Transcript as UpstreamTranscript,
} from '../providers/types.ts';
import type { UpstreamRouter } from '../providers/router.ts';
import { RouterError } from '../providers/router-error.ts';
import { jobError, jobErrorOf, onlyBusy, recordingGone } from './job-errors.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { StepFencedError } from '../actors/errors.ts';
import {
  SUPERSEDED,
  transcriptionJobMachineOf,
  version,
  type FailInput,
  type FinishInput,
  type JobResultSummary,
  type PollInput,
  type PollOutput,
  type SubmitInput,
  type SubmitOutput,
} from '../../machines/transcription-job.machine.ts';
import { priceOfSeconds } from '../billing/pricing.ts';
import { transcriptForClient } from './result.ts';
import { examineAudio } from './audio.ts';
import type { Transcript } from '../speech/transcript.ts';
import { contextOf } from '../shared/recognition-context.ts';

export const JOB_KIND = 'transcription-job';

/** What a job carries for its effects (the machine's `spec`): plain JSON, fixed at creation. */
export interface JobSpecFields {
  model: string;
  audioKey: string;
  filename: string;
  contentType: string;
  bytes: number;
  language?: string;
  mode: SttMode;
  prompt?: string;
  /** The client's key terms (`key_terms[]`). */
  keyTerms?: string[];
  diarize: boolean;
  numSpeakers?: number;
  /** The decoded duration, when creating the job already had to decode the recording to measure it. */
  durationS?: number;
  payer: Payer;
  hold: Hold;
  requestId: string;
  startedAt: number;
}

/** The job's machine, its `spec` typed as the fields above (the effects read them, the service writes them). */
const transcriptionJobMachine = transcriptionJobMachineOf<JobSpecFields>();

export type JobKind = ActorKind<typeof transcriptionJobMachine>;

export interface JobKindDeps {
  blobs: BlobStore;
  meter: Pick<Meter, 'resume'>;
  models: ModelCatalog;
  providers: ReadonlyMap<string, Provider>;
  resolveRoutes(model: ModelDoc): ResolvedRoute[];
  /** The one failover policy (health, cool-down, limits), which job submissions go through as requests do. */
  router: Pick<UpstreamRouter, 'submitJob'>;
  events: EventSink;
  now(): number;
  /** Where providers call back (`${publicUrl}/v1/audio/transcriptions/callbacks/<provider>`), when the gateway has a public URL. */
  callbackUrl?(provider: string, jobId: string): { url: string; token: string } | undefined;
  /** First poll after a provider accepted a job, then backing off to `maxPollMs`. */
  pollMs?: number;
  maxPollMs?: number;
  /** Active jobs one instance holds (the rest wait, queued, for an instance with room). */
  capacity?: number;
  /** The longest recording a job takes (decoded seconds): longer ones fail, free, and are decoded no further. */
  maxAudioSeconds: number;
  /** How long a job's hold lives from its creation (as the hold taken at upload). */
  holdTtlMs: number;
  /** Finished jobs are deleted (with their audio and transcript) this long after they end. */
  retainMs: number;
}

/** What the `hold` step decided: the hold covering the decoded recording, or why the job cannot run. */
type Covered = { hold: Hold; replaced?: Hold } | { refused: { code: string; message: string } };

/** Billed seconds: the decoded duration rounded up to the second. */
const billedSeconds = (durationS: number): number => Math.ceil(durationS - 1e-9);

const minutes = (seconds: number): string => (seconds % 60 === 0 ? `${seconds / 60} minutes` : `${seconds} seconds`);

export const rawKeyOf = (jobId: string): string => `jobs/${jobId}/raw.json`;
export const resultKeyOf = (jobId: string): string => `jobs/${jobId}/result.json`;

/** Before a route is tried again when every one was busy; doubling to a minute. */
const ROUTE_BUSY_RETRY_MS = 1_000;
/** How long a job waits for a route's slot before the router moves on (a request waits 10 s). */
const JOB_QUEUE_WAIT_MS = 60_000;

export function transcriptionJobKind(deps: JobKindDeps): JobKind {
  const pollMs = deps.pollMs ?? 5_000;
  const maxPollMs = deps.maxPollMs ?? 60_000;

  return {
    kind: JOB_KIND,
    machine: transcriptionJobMachine,
    version,
    // Few events per job, each a step of its life: every one is written.
    persistence: { mode: 'every-event' },
    onOrphan: 'resume',
    ...(deps.capacity !== undefined ? { capacity: deps.capacity } : {}),
    retainFinishedMs: deps.retainMs,
    // The recording and transcripts go with the job.
    onRetired: async (id) => {
      for (const blob of await deps.blobs.list(`jobs/${id}/`)) await deps.blobs.delete(blob.key);
    },
    project: ({ value, context }) => {
      const c = context as { account: string; jobId: string; createdAt: number };
      const status = typeof value === 'string' ? (value === 'failing' ? 'processing' : value) : Object.keys(value)[0]!;
      // `order` sorts newest first and breaks ties by id: the list's cursor.
      return { account: c.account, status, order: `${String(c.createdAt).padStart(15, '0')}:${c.jobId}` };
    },
    indexes: [
      { account: 1, order: -1 },
      { account: 1, status: 1, order: -1 },
    ],
    provide: (ctx) => effects(deps, ctx, pollMs, maxPollMs),
  };
}

function effects(deps: JobKindDeps, ctx: ActorKindContext, pollMs: number, maxPollMs: number) {
  /** The route a submission step was recorded for (create, submit or inline), if any. */
  async function recordedRoute(count: number): Promise<number | null> {
    for (let i = 0; i < count; i++) {
      for (const step of [`create:${i}`, `submit:${i}`, `inline:${i}`]) if ((await ctx.steps.done(step)) !== undefined) return i;
    }
    return null;
  }

  /** The recording handed to a provider's job API (its job id recorded first when it gives one before the audio). */
  async function submitToJobs(
    jobs: TranscriptionJobCapability,
    route: ResolvedRoute,
    index: number,
    jobId: string,
    spec: JobSpecFields,
    durationS: number,
  ): Promise<SubmitOutput> {
    const callback = deps.callbackUrl?.(route.provider, jobId);
    if (jobs.create && jobs.start) {
      // The provider's id recorded first; then the audio goes up and the job starts (once).
      const { providerJobId } = await ctx.steps.once(`create:${index}`, ({ signal }) => jobs.create!(route, request(spec, '', durationS), signal, callback));
      await ctx.steps.once(`start:${index}`, async ({ signal }) => {
        const started = await deps.blobs.withFile(spec.audioKey, (path) =>
          jobs.start!(route, providerJobId, request(spec, path, durationS), signal).then(() => true),
        );
        if (!started) throw recordingGone();
        return true;
      });
      return { kind: 'accepted', providerJobId, routeIndex: index, at: deps.now(), pollDelayMs: pollMs };
    }
    const { providerJobId } = await ctx.steps.once(`submit:${index}`, async ({ signal }) => {
      const out = await deps.blobs.withFile(spec.audioKey, (path) => jobs.submit(route, request(spec, path, durationS), signal, callback));
      if (!out) throw recordingGone();
      return out;
    });
    return { kind: 'accepted', providerJobId, routeIndex: index, at: deps.now(), pollDelayMs: pollMs };
  }

  /** The recording transcribed in one call (the offline engine, or a provider without a job API), stored. */
  async function transcribeInline(
    stt: TranscribeCapability,
    route: ResolvedRoute,
    index: number,
    jobId: string,
    spec: JobSpecFields,
    durationS: number,
  ): Promise<SubmitOutput> {
    const rawKey = await ctx.steps.once(`inline:${index}`, async ({ signal }) => {
      const t = await deps.blobs.withFile(spec.audioKey, (path) => stt.transcribe(route, request(spec, path, durationS), signal));
      if (!t) throw recordingGone();
      return storeRaw(jobId, t);
    });
    return { kind: 'inline', rawKey };
  }

  async function routeFor(modelId: string, routeIndex: number): Promise<{ route: ResolvedRoute; provider: Provider }> {
    const model = await deps.models.get(modelId);
    const route = model ? deps.resolveRoutes(model)[routeIndex] : undefined;
    const provider = route && !route.problem ? deps.providers.get(route.provider) : undefined;
    if (!route || !provider) throw jobError('model_misconfigured', 'The model has no usable route for this job.', true);
    return { route, provider };
  }

  function request(spec: JobSpecFields, path: string, durationS: number): TranscribeRequest {
    const req: TranscribeRequest = {
      audio: { path, filename: spec.filename, contentType: spec.contentType, bytes: spec.bytes, durationS },
      mode: spec.mode,
      timestamps: ['segment'],
      diarize: spec.diarize,
    };
    if (spec.language !== undefined) req.language = spec.language;
    const context = contextOf({ prompt: spec.prompt, keyTerms: spec.keyTerms });
    if (context) req.context = context;
    if (spec.numSpeakers !== undefined) req.numSpeakers = spec.numSpeakers;
    return req;
  }

  /**
   * The recording's decoded duration, measured once (a step): what the job is billed for, whatever
   * its container claims. Decoding stops just past the longest recording a job takes.
   */
  const examine = (spec: JobSpecFields) =>
    ctx.steps.once('examine', async ({ signal }) => {
      if (spec.durationS !== undefined) return { durationS: spec.durationS };
      const facts = await deps.blobs.withFile(spec.audioKey, (path) => examineAudio(path, { signal, maxSeconds: deps.maxAudioSeconds }));
      if (!facts) throw jobError('invalid_audio', 'The recording is gone.', false);
      return { durationS: facts.durationS };
    });

  /**
   * The job's metered call, kept in its spec and resumed through the Meter by whichever instance
   * runs the step: on the upload's hold, or on `hold` (the one that replaced it).
   */
  const callOf = (spec: JobSpecFields, hold: Hold = spec.hold) =>
    deps.meter.resume({ payer: spec.payer, model: spec.model, modelType: 'stt', hold, requestId: spec.requestId, startedAt: spec.startedAt });

  /**
   * The hold that covers the decoded recording (a step, before any work): the one taken at upload
   * when it covers it; else a larger one in its place, so a container that claims less than it
   * holds is charged all it holds. A recording past the longest a job takes, or a wallet that
   * cannot cover it, fails the job, free.
   */
  const cover = (spec: JobSpecFields, durationS: number) =>
    ctx.steps.once<Covered>('hold', async () => {
      if (durationS > deps.maxAudioSeconds) {
        return { refused: { code: 'audio_too_long', message: `The recording decodes to more than the ${minutes(deps.maxAudioSeconds)} a job takes.` } };
      }
      const model = await deps.models.get(spec.model);
      const cost = model ? priceOfSeconds(model.pricing, billedSeconds(durationS)) : 0;
      if (cost <= spec.hold.amountMicrocents) return { hold: spec.hold };
      try {
        // Named after the job: a replay after a crash finds the hold it took, never takes a second.
        const { hold } = await callOf(spec).cover(cost, { id: `${spec.requestId}:decoded`, expiresAt: spec.startedAt + deps.holdTtlMs });
        return { hold, replaced: spec.hold };
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        // The key's spend window full (a CPD or CPM cap): refused with the 429's words.
        if (code === 'rate_limit_exceeded') return { refused: { code, message: (err as Error).message } };
        if (code === 'insufficient_credit') {
          return {
            refused: {
              code: 'insufficient_credit',
              message: `The recording decodes to ${Math.round(durationS)} s, more than its container declared, and the wallet cannot cover it. ${(err as Error).message}`,
            },
          };
        }
        throw err;
      }
    });

  /** The covering hold once the smaller one it replaced is returned (unrecorded; idempotent). */
  const covered = async (spec: JobSpecFields, durationS: number): Promise<Hold> => {
    const c = await cover(spec, durationS);
    if ('refused' in c) throw jobError(c.refused.code, c.refused.message, false);
    if (c.replaced) await callOf(spec, c.replaced).drop();
    return c.hold;
  };

  /**
   * An effect under the lease it started in: whatever it throws once that lease is gone (taken by
   * another instance, or the copy unloaded) is `superseded`, which the machine does not take for
   * the job's failure: the owner restores the job and runs the step again.
   */
  const leased =
    <I, O>(work: (args: { input: I }) => Promise<O>) =>
    async (args: { input: I }): Promise<O> => {
      const { signal } = ctx.lease();
      try {
        return await work(args);
      } catch (err) {
        if (signal.aborted || err instanceof StepFencedError) throw jobError(SUPERSEDED, 'The job moved to another owner.', false);
        throw err;
      }
    };

  const storeRaw = async (jobId: string, transcript: UpstreamTranscript): Promise<string> => {
    const key = rawKeyOf(jobId);
    await deps.blobs.put(key, Buffer.from(JSON.stringify(transcript)));
    return key;
  };

  return {
    actors: {
      submit: fromPromise<SubmitOutput, SubmitInput<JobSpecFields>>(
        leased(async ({ input }) => {
          const { spec } = input;
          const { durationS } = await examine(spec);
          await covered(spec, durationS);
          const model = await deps.models.get(spec.model);
          const routes = model ? deps.resolveRoutes(model) : [];
          const req = request(spec, '', durationS);
          // A submission a crash interrupted after a route took it is resumed on that route, whatever
          // the router would choose now: a provider is never handed the recording twice.
          const recorded = await recordedRoute(routes.length);
          const order = recorded === null ? routes : [routes[recorded]!];
          const indexOf = (route: ResolvedRoute) => routes.indexOf(route);
          const viaJobs = (provider: Provider, route: ResolvedRoute) =>
            provider.transcriptionJobs !== undefined && !provider.transcriptionJobs.refuses?.(req, route);
          const refuses = (provider: Provider, route: ResolvedRoute) =>
            viaJobs(provider, route)
              ? undefined
              : provider.transcribe
                ? provider.transcribe.refuses?.(req, route)
                : { param: 'model', message: 'The route cannot transcribe.' };
          const attempt = (provider: Provider, route: ResolvedRoute): Promise<SubmitOutput> =>
            viaJobs(provider, route)
              ? submitToJobs(provider.transcriptionJobs!, route, indexOf(route), input.jobId, spec, durationS)
              : transcribeInline(provider.transcribe!, route, indexOf(route), input.jobId, spec, durationS);
          const { signal } = ctx.lease();
          for (let wait = ROUTE_BUSY_RETRY_MS; ; wait = Math.min(wait * 2, 60_000)) {
            try {
              return (await deps.router.submitJob(order, signal, attempt, refuses, { queueWaitMs: JOB_QUEUE_WAIT_MS })).result;
            } catch (err) {
              // Every usable route busy (its `max_concurrent` or `rpm` slots taken): a job waits, it does not fail.
              if (!(err instanceof RouterError) || !onlyBusy(err)) throw jobErrorOf(err);
              ctx.logger.info({ job_id: input.jobId, retry_in_ms: wait }, 'every route of the job is busy; waiting');
              await sleep(wait, undefined, { signal: signal as AbortSignal });
            }
          }
        }),
      ),

      poll: fromPromise<PollOutput, PollInput<JobSpecFields>>(
        leased(async ({ input }) => {
          const { spec } = input;
          const { route, provider } = await routeFor(spec.model, input.routeIndex);
          const jobs = provider.transcriptionJobs;
          if (!jobs) return { state: 'failed', error: { code: 'model_misconfigured', message: 'The provider that took the job no longer serves this model.' } };
          const backoff = Math.min(maxPollMs, pollMs * 2 ** Math.min(input.polls, 6));
          let answer;
          try {
            answer = await jobs.poll(route, input.providerJobId, ctx.lease().signal);
          } catch (err) {
            // A provider we cannot reach now: try again later, the job stays with it.
            ctx.logger.warn({ err: (err as Error).message, job_id: input.jobId }, 'transcription job poll failed; retrying');
            return { state: 'pending', at: deps.now(), pollDelayMs: backoff };
          }
          if (answer.state === 'pending') return { state: 'pending', at: deps.now(), pollDelayMs: backoff };
          if (answer.state === 'failed')
            return { state: 'failed', error: { code: 'upstream_error', message: answer.message || 'The provider could not transcribe the recording.' } };
          const rawKey = await ctx.steps.once('fetch', () => storeRaw(input.jobId, answer.transcript));
          return { state: 'completed', rawKey };
        }),
      ),

      finish: fromPromise<{ result: JobResultSummary; at: number }, FinishInput<JobSpecFields>>(
        leased(async ({ input }) => {
          const { spec } = input;
          const { durationS } = await examine(spec);
          const result = await ctx.steps.once('result', async () => {
            const raw = await readJson<UpstreamTranscript>(deps.blobs, input.rawKey);
            const transcript = transcriptForClient(raw, { durationS, language: spec.language ?? null, diarized: spec.diarize });
            const resultKey = resultKeyOf(input.jobId);
            await deps.blobs.put(resultKey, Buffer.from(JSON.stringify(transcript)));
            return summaryOf(resultKey, transcript);
          });
          const seconds = billedSeconds(durationS);
          const hold = await covered(spec, durationS);
          await ctx.steps.once('charge', async () => {
            const model = await deps.models.get(spec.model);
            const cost = model ? priceOfSeconds(model.pricing, seconds) : hold.amountMicrocents;
            await callOf(spec, hold).settle({ route: null, seconds, costMicrocents: cost, status: 'ok' });
            return true;
          });
          await ctx.steps.once('notify', () =>
            notify(deps, spec, 'transcription.completed', { job_id: input.jobId, status: 'completed', duration: result.duration }),
          );
          await deps.blobs.delete(input.rawKey).catch(() => false);
          return { result, at: deps.now() };
        }),
      ),

      fail: fromPromise<{ at: number }, FailInput<JobSpecFields>>(
        leased(async ({ input }) => {
          const { spec } = input;
          await ctx.steps.once('charge', async () => {
            // What the job holds: the upload's hold, or the one that replaced it (returned, unrecorded, first).
            const c = await ctx.steps.done<Covered>('hold');
            const hold = c && 'hold' in c ? c.hold : spec.hold;
            if (c && 'replaced' in c && c.replaced) await callOf(spec, c.replaced).drop();
            await callOf(spec, hold).release('upstream_failed', { seconds: 0 });
            return true;
          });
          await ctx.steps.once('notify', () => notify(deps, spec, 'transcription.failed', { job_id: input.jobId, status: 'failed', error: input.error.code }));
          await deps.blobs.delete(rawKeyOf(input.jobId)).catch(() => false);
          return { at: deps.now() };
        }),
      ),
    },
  };
}

async function notify(
  deps: JobKindDeps,
  spec: JobSpecFields,
  event: 'transcription.completed' | 'transcription.failed',
  fields: Record<string, string | number>,
): Promise<boolean> {
  await deps.events.emit({ event, owner: { type: spec.payer.ownerType, id: spec.payer.ownerId }, fields });
  return true;
}

function summaryOf(resultKey: string, t: Transcript): JobResultSummary {
  return { resultKey, language: t.language, duration: t.duration, speakers: new Set(t.segments.map((s) => s.speaker)).size, segments: t.segments.length };
}

export async function readJson<T>(blobs: BlobStore, key: string): Promise<T> {
  const stream = await blobs.get(key);
  if (!stream) throw jobError('transcription_failed', 'The stored transcript is gone.', false);
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(parts).toString('utf8')) as T;
}
