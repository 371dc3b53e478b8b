// How a transcription job's failures read to its client (the job's `error`), and which of the
// router's failures only mean "every route was busy" (the job waits and tries again): the job's
// actor kind (src/transcription/kind.ts) decides with these.
import type { SubmitError } from '../../machines/transcription-job.machine.ts';
import { UpstreamError } from '../providers/types.ts';
import { RouterError } from '../providers/router-error.ts';

/** A failure a job can tell its client about; `retryable` sends the job to the model's next route. */
export function jobError(code: string, message: string, retryable: boolean): SubmitError & Error {
  return Object.assign(new Error(message), { code, retryable });
}

/** A job's recording missing from the blob store: the route is not at fault, so no failover (a client error). */
export const recordingGone = (): UpstreamError => new UpstreamError('client', 'the recording is gone', false, 400, 'The recording is gone.');

/** The router gave up only because every usable route was busy (or cooling), not because one failed or refused. */
export const onlyBusy = (err: RouterError): boolean =>
  err.code === 'model_unavailable' && err.attempts.length > 0 && err.attempts.every((a) => a.outcome === 'queue_timeout' || a.outcome === 'config');

/** What the client reads of a submission that no route could serve (the router's policy already failed over). */
export function jobErrorOf(err: unknown): SubmitError & Error {
  if (err instanceof RouterError) {
    const last = err.attempts.at(-1);
    if (err.code === 'invalid_request' && last?.outcome === 'client')
      return jobError('invalid_audio', err.message.replace(/^the upstream rejected the request: /, ''), false);
    if (err.code === 'invalid_request') return jobError('invalid_request', err.message, false);
    if (err.code === 'model_misconfigured') return jobError('model_misconfigured', 'The model has no usable route for this job.', false);
    return jobError('model_unavailable', 'The transcription provider failed.', false);
  }
  if ((err as Partial<SubmitError>).retryable !== undefined) return err as SubmitError & Error;
  return jobError('transcription_failed', 'The transcription failed.', false);
}
