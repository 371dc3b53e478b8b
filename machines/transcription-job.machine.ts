// One long-recording transcription job as an actor: the spec's `queued` → `processing` →
// `completed` | `failed`. Pure: every effect is invoked by name and injected by the runtime
// (src/transcription/kind.ts); this file does no I/O and reads no clock (times come in events and
// effect outputs).
//
// - `queued`: the recording is already stored (blob port) when the job is created; a job waits
//   here, unowned, only while every instance is at the kind's capacity, and starts when claimed.
// - `processing.submitting`: `submit` hands the recording to the model's routes through the router's
//   one failover policy (order, health, cool-down, `max_concurrent`, `rpm`; before acceptance only).
//   A provider with a job API answers its job id and the route that took it (`routeIndex`; a
//   once-only step keyed by job and route: a replay after a crash gets the recorded id, never a
//   second upload); a provider without one, or the offline engine, transcribes the whole recording
//   in that step (`inline`). A submission no route could take → `failed`.
// - `processing.waiting` / `polling`: once a provider accepted the job it stays there. The machine
//   polls after `pollDelayMs` (the deadline `nextPollAt` is kept in context, so a restore re-arms
//   it: `after` timers are lost on restore) and takes a provider callback (`provider.callback`,
//   through the runtime's inbox on whichever instance received it) at any time; a callback whose
//   transcript the receiver stored skips the poll.
// - `processing.finishing`: every path ends with the provider's transcript stored in a blob
//   (`rawKey`; transcripts never enter the snapshot, which stays small). `finish` renames speakers
//   SPEAKER_00…, stores the result, charges the recording's duration once and notifies (each a
//   once-only step) and answers the summary kept in context.
// - `failing` → `failed`: `fail` returns what the job held and notifies; a failed job is never charged.
import { assign, fromPromise, setup } from 'xstate';

export const version = 1;

export interface TranscriptionJobInput<Spec extends JobSpec = JobSpec> {
  jobId: string;
  /** Who pays and who may read it (the API key's account), and the model asked for. */
  account: string;
  model: string;
  createdAt: number;
  /** How many routes the model had when the job was created (kept for stored jobs; failover is the router's). */
  routes?: number;
  /**
   * What the effects need and the machine never reads (the request's options, the stored audio's
   * facts, the hold): plain JSON, handed to every effect with the job id.
   */
  spec: Spec;
}

/**
 * Opaque to the machine; the kind (src/transcription/kind.ts) defines and reads it: it builds
 * `transcriptionJobMachineOf<its spec>()`, so the effects read its fields typed.
 */
export type JobSpec = object;

export interface JobResultSummary {
  /** Blob key of the transcript JSON. */
  resultKey: string;
  language: string | null;
  duration: number;
  speakers: number;
  segments: number;
}

export interface JobError {
  code: string;
  message: string;
}

export interface TranscriptionJobContext<Spec extends JobSpec = JobSpec> extends TranscriptionJobInput<Spec> {
  /** The route that accepted the job (the model's route index), which is polled. */
  routeIndex: number;
  /** The provider's job id once it accepted the recording (then the job never moves). */
  providerJobId: string | null;
  /** While waiting on a provider: when to poll next (epoch ms) and the delay armed for it. */
  nextPollAt: number | null;
  pollDelayMs: number;
  polls: number;
  /** Blob key of the provider's transcript (gateway shape), once it has one. */
  rawKey: string | null;
  finishedAt: number | null;
  result: JobResultSummary | null;
  error: JobError | null;
}

export interface SubmitInput<Spec extends JobSpec = JobSpec> {
  jobId: string;
  spec: Spec;
}

/**
 * `accepted`: the provider took the recording as a job of its own. `inline`: the transcript was made
 * in the step (the offline engine, or a provider without a job API) and stored at `rawKey`.
 */
export type SubmitOutput =
  | { kind: 'accepted'; providerJobId: string; routeIndex: number; at: number; pollDelayMs: number }
  | { kind: 'inline'; rawKey: string };

export interface PollInput<Spec extends JobSpec = JobSpec> {
  jobId: string;
  spec: Spec;
  routeIndex: number;
  providerJobId: string;
  polls: number;
}

export type PollOutput = { state: 'pending'; at: number; pollDelayMs: number } | { state: 'completed'; rawKey: string } | { state: 'failed'; error: JobError };

export interface FinishInput<Spec extends JobSpec = JobSpec> {
  jobId: string;
  spec: Spec;
  rawKey: string;
}

export interface FailInput<Spec extends JobSpec = JobSpec> {
  jobId: string;
  spec: Spec;
  error: JobError;
}

/** What a failed submission tells the machine (`retryable` is the router's business now: no route took it). */
export interface SubmitError {
  retryable: boolean;
  code: string;
  message: string;
}

export type TranscriptionJobEvent =
  /**
   * A provider's callback, stored by the receiver: `rawKey` when it carried the transcript, `error`
   * when it reported the job failed (a provider without a status endpoint says so only there).
   */
  | { type: 'provider.callback'; providerJobId: string; rawKey?: string; error?: JobError }
  | { type: 'runtime.resumed'; now: number; mode: 'resume' | 'finalize' };

function asJobError(err: unknown): SubmitError {
  const e = err as Partial<SubmitError> | null;
  return {
    retryable: e?.retryable === true,
    code: typeof e?.code === 'string' ? e.code : 'transcription_failed',
    message: typeof e?.message === 'string' && e.message ? e.message : 'The transcription failed.',
  };
}

function errorOf(err: unknown): JobError {
  const { code, message } = asJobError(err);
  return { code, message };
}

/** The error code of an effect cut because its lease was lost (see the `superseded` guard). */
export const SUPERSEDED = 'superseded';

const FAILED: JobError = { code: 'transcription_failed', message: 'The transcription failed.' };

/** The machine, its `spec` typed as `Spec` (the kind's fields; the machine never reads them). */
export function transcriptionJobMachineOf<Spec extends JobSpec = JobSpec>() {
  return setup({
    types: {
      context: {} as TranscriptionJobContext<Spec>,
      events: {} as TranscriptionJobEvent,
      input: {} as TranscriptionJobInput<Spec>,
    },
    actors: {
      submit: fromPromise<SubmitOutput, SubmitInput<Spec>>(async () => {
        throw new Error('transcription job: submit not provided');
      }),
      poll: fromPromise<PollOutput, PollInput<Spec>>(async () => {
        throw new Error('transcription job: poll not provided');
      }),
      finish: fromPromise<{ result: JobResultSummary; at: number }, FinishInput<Spec>>(async () => {
        throw new Error('transcription job: finish not provided');
      }),
      fail: fromPromise<{ at: number }, FailInput<Spec>>(async () => {
        throw new Error('transcription job: fail not provided');
      }),
    },
    delays: {
      untilPoll: ({ context }) => context.pollDelayMs,
    },
    guards: {
      /**
       * The effect was cut because this instance lost the job's lease (another owner took it, or the
       * runtime is unloading it): not the job's failure. The copy that saw it is being discarded; the
       * owner restores the last stored state, which re-runs the step.
       */
      superseded: ({ event }) => (event as { error?: { code?: unknown } }).error?.code === SUPERSEDED,
      /** A callback about this job (another job's id, or a callback before acceptance, is ignored). */
      ours: ({ context, event }) => event.type === 'provider.callback' && context.providerJobId !== null && event.providerJobId === context.providerJobId,
    },
    actions: {
      keepCallbackResult: assign({
        rawKey: ({ context, event }) => (event.type === 'provider.callback' && event.rawKey ? event.rawKey : context.rawKey),
      }),
    },
  }).createMachine({
    id: 'transcription-job',
    context: ({ input }) => ({
      ...input,
      routeIndex: 0,
      providerJobId: null,
      nextPollAt: null,
      pollDelayMs: 0,
      polls: 0,
      rawKey: null,
      finishedAt: null,
      result: null,
      error: null,
    }),
    initial: 'queued',
    states: {
      queued: {
        always: 'processing',
      },
      processing: {
        initial: 'submitting',
        states: {
          submitting: {
            invoke: {
              id: 'submit',
              src: 'submit',
              input: ({ context }) => ({ jobId: context.jobId, spec: context.spec }),
              onDone: [
                {
                  guard: ({ event }) => event.output.kind === 'inline',
                  target: 'finishing',
                  actions: assign({ rawKey: ({ event }) => (event.output as Extract<SubmitOutput, { kind: 'inline' }>).rawKey }),
                },
                {
                  target: 'waiting',
                  actions: assign(({ event }) => {
                    const out = event.output as Extract<SubmitOutput, { kind: 'accepted' }>;
                    return { providerJobId: out.providerJobId, routeIndex: out.routeIndex, pollDelayMs: out.pollDelayMs, nextPollAt: out.at + out.pollDelayMs };
                  }),
                },
              ],
              onError: [{ guard: 'superseded' }, { target: '#transcription-job.failing', actions: assign({ error: ({ event }) => errorOf(event.error) }) }],
            },
          },
          waiting: {
            always: { guard: ({ context }) => context.rawKey !== null, target: 'finishing' },
            after: { untilPoll: 'polling' },
            on: {
              'provider.callback': [
                {
                  guard: ({ context, event }) => event.providerJobId === context.providerJobId && event.error !== undefined,
                  target: '#transcription-job.failing',
                  actions: assign({ error: ({ event }) => event.error ?? FAILED }),
                },
                {
                  guard: ({ context, event }) => event.providerJobId === context.providerJobId && event.rawKey !== undefined,
                  target: 'finishing',
                  actions: 'keepCallbackResult',
                },
                { guard: 'ours', target: 'polling' },
              ],
              // `after` timers do not survive a restore: re-arm from the deadline kept in context.
              'runtime.resumed': {
                target: 'waiting',
                reenter: true,
                actions: assign({ pollDelayMs: ({ context, event }) => Math.max(0, (context.nextPollAt ?? event.now) - event.now) }),
              },
            },
          },
          polling: {
            invoke: {
              id: 'poll',
              src: 'poll',
              input: ({ context }) => ({
                jobId: context.jobId,
                spec: context.spec,
                routeIndex: context.routeIndex,
                providerJobId: context.providerJobId!,
                polls: context.polls,
              }),
              onDone: [
                {
                  guard: ({ event }) => event.output.state === 'pending',
                  target: 'waiting',
                  actions: assign(({ context, event }) => {
                    const out = event.output as Extract<PollOutput, { state: 'pending' }>;
                    return { polls: context.polls + 1, pollDelayMs: out.pollDelayMs, nextPollAt: out.at + out.pollDelayMs };
                  }),
                },
                {
                  guard: ({ event }) => event.output.state === 'completed',
                  target: 'finishing',
                  actions: assign({ rawKey: ({ event }) => (event.output as Extract<PollOutput, { state: 'completed' }>).rawKey }),
                },
                {
                  target: '#transcription-job.failing',
                  actions: assign({ error: ({ event }) => (event.output as Extract<PollOutput, { state: 'failed' }>).error }),
                },
              ],
              // The effect retries a provider it cannot reach with its own backoff; what escapes it fails the job.
              onError: [{ guard: 'superseded' }, { target: '#transcription-job.failing', actions: assign({ error: ({ event }) => errorOf(event.error) }) }],
            },
            on: {
              // A callback that carries the result while a poll is in flight: kept, used when the poll answers pending.
              'provider.callback': { guard: 'ours', actions: 'keepCallbackResult' },
            },
          },
          finishing: {
            invoke: {
              id: 'finish',
              src: 'finish',
              input: ({ context }) => ({ jobId: context.jobId, spec: context.spec, rawKey: context.rawKey! }),
              onDone: {
                target: '#transcription-job.completed',
                actions: assign(({ event }) => ({ result: event.output.result, finishedAt: event.output.at })),
              },
              onError: [{ guard: 'superseded' }, { target: '#transcription-job.failing', actions: assign({ error: ({ event }) => errorOf(event.error) }) }],
            },
          },
        },
      },
      failing: {
        invoke: {
          id: 'fail',
          src: 'fail',
          input: ({ context }) => ({ jobId: context.jobId, spec: context.spec, error: context.error ?? FAILED }),
          onDone: { target: 'failed', actions: assign({ finishedAt: ({ event }) => event.output.at }) },
          // Returning the hold failed (the store down): the job still ends failed; the hold sweep returns it.
          onError: [{ guard: 'superseded' }, { target: 'failed' }],
        },
      },
      completed: { type: 'final' },
      failed: { type: 'final' },
    },
  });
}

/** The machine with an untyped `spec` (the machine's own tests). */
export const transcriptionJobMachine = transcriptionJobMachineOf();
