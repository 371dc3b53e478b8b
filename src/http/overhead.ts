// The gateway's own time on a /v1 request: the time since its headers arrived (reading and parsing
// the body, auth, limits, billing, serialising) less the time it waited on upstreams, which the
// upstream clients add to the request's Cancel (src/providers/cancel.ts, `waitedOn`). Sent as a
// header on every /v1 answer and observed per route in /metrics (docs/api/http-edge.md,
// "Overhead"). Runs on every /v1 request, so it is kept to a clock read and a subtraction: no
// object, closure or promise per request.
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

export const OVERHEAD_HEADER = 'x-gateway-overhead-ms';

/** The request's time so far (`elapsedMs`, fastify's reply.elapsedTime) less its waits on upstreams, in ms; never below 0. */
export function overheadMs(request: FastifyRequest, elapsedMs: number): number {
  const ms = request.cancel === null ? elapsedMs : elapsedMs - request.cancel.upstreamMs;
  return Math.max(ms, 0);
}

/** Puts the overhead so far on a reply whose headers are about to leave (a stream's, before writeHead). */
export function stampOverhead(reply: FastifyReply): void {
  reply.header(OVERHEAD_HEADER, overheadMs(reply.request, reply.elapsedTime).toFixed(2));
}

/**
 * The onSend hook of every /v1 route (added by app.ts's onRoute): it runs after the answer is
 * serialised and before its headers are written. Synchronous, so fastify makes no promise for it.
 */
export function overheadOnSend(_request: FastifyRequest, reply: FastifyReply, payload: unknown, done: HookHandlerDoneFunction): void {
  stampOverhead(reply);
  (done as (err: null, payload: unknown) => void)(null, payload);
}
