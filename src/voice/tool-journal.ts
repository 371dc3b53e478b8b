// The tool requests a call has in flight (issue 41 §5), kept in the store while they wait, so a
// kill -9 leaves a trace: the live side writes one before its request goes out and deletes it when
// the answer (or the timeout) comes; a call whose instance died is finalized by the restarted one
// (src/voice/kind.ts `finish`), which turns each request still here into a `tool` turn on the
// call's transcript with status `interrupted` (sent, answer never recorded: the integrator may have
// acted on it, and deduplicates by `tool_call_id`), then deletes it. This module owns
// `voice_tool_requests`; the turn is appended through the transcript's owner (src/voice/transcript.ts).
import type { Logger } from 'pino';
import type { ToolExchange, Turn } from '../../machines/voice-call.machine.ts';
import type { Store } from '../store/port.ts';

interface PendingDoc {
  /** `${call id}:${tool_call_id}` */
  _id: string;
  call_id: string;
  request: Pick<ToolExchange, 'id' | 'type' | 'name' | 'arguments'>;
  /** When it was sent, in seconds from the call's answer (the transcript's clock). */
  start: number;
  /** The transcript turn it is recorded as, once chosen (a replayed finish writes the same turn). */
  seq?: number;
  sent_at: Date;
  [k: string]: unknown;
}

/** What the live side tells the journal (CallTools, src/voice/tools.ts). */
export interface ToolJournalWriter {
  sent(callId: string, request: PendingDoc['request'], start: number): Promise<void>;
  answered(callId: string, requestId: string): Promise<void>;
}

export class ToolJournal implements ToolJournalWriter {
  private readonly pending;

  constructor(
    store: Store,
    /** The transcript's owner (src/voice/transcript.ts `CallTranscripts`). */
    private readonly transcripts: {
      nextSeq(callId: string): Promise<number>;
      append(callId: string, account: string, seq: number, turn: Turn): Promise<boolean>;
    },
    private readonly now: () => number,
    private readonly log: Logger,
  ) {
    this.pending = store.collection<PendingDoc>('voice_tool_requests');
  }

  async init(): Promise<void> {
    await this.pending.createIndex({ keys: { call_id: 1 } });
  }

  async sent(callId: string, request: PendingDoc['request'], start: number): Promise<void> {
    const doc: PendingDoc = { _id: `${callId}:${request.id}`, call_id: callId, request, start, sent_at: new Date(this.now()) };
    await this.pending.replaceOne({ _id: doc._id }, doc, { upsert: true });
  }

  async answered(callId: string, requestId: string): Promise<void> {
    await this.pending.deleteOne({ _id: `${callId}:${requestId}` });
  }

  /**
   * The call's instance died: each request still in flight becomes an `interrupted` tool turn.
   * Once, across a replay of the finish too: its turn number is kept with it before the turn is
   * written (the transcript keeps one turn per number), and it is deleted once written.
   */
  async interrupted(callId: string, account: string): Promise<number> {
    const left = await this.pending.find({ call_id: callId }, { sort: { start: 1 }, limit: 100 });
    for (const doc of left) {
      const { request, start } = doc;
      const turn: Turn = {
        role: 'tool',
        text: `${request.name}: interrupted`,
        start,
        end: start,
        tool: { ...request, status: 'interrupted', status_code: null, error: 'gateway_restart', result: '', latency_ms: 0 },
      };
      const seq = doc.seq ?? (await this.transcripts.nextSeq(callId));
      if (doc.seq === undefined) await this.pending.updateOne({ _id: doc._id }, { $set: { seq } });
      await this.transcripts.append(callId, account, seq, turn);
      await this.pending.deleteOne({ _id: doc._id });
    }
    if (left.length > 0) this.log.info({ call_id: callId, requests: left.length }, 'tool requests interrupted by the restart recorded');
    return left.length;
  }

  /** Deletes what is left of the call's requests (its actor is being deleted). */
  async remove(callId: string): Promise<void> {
    await this.pending.deleteMany({ call_id: callId });
  }
}
