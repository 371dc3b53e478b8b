// A call's transcript, kept out of its actor: one document per turn in `voice_turns` (this module
// owns the collection), `_id` the call id and the turn's number, so writing a turn again (a retry)
// never records it twice. The call's live side numbers its turns and appends each one here before
// its actor hears of it (`recordingTurns`); the actor only counts them (machines/voice-call.machine.ts),
// so its snapshot stays small however long the call. Reads are scoped to the paying account, as the
// call's are; the turns are deleted with the call's actor, when its retention ends (the kind's
// `onRetired`, src/voice/kind.ts).
import type { Logger } from 'pino';
import type { Turn, VoiceCallEvent } from '../../machines/voice-call.machine.ts';
import { isDuplicateKeyError, type Store } from '../store/port.ts';
import type { CallActor } from './call-line.ts';

/** The turns a call's transcript keeps: later ones are left out and counted (the view says how many). */
export const MAX_TURNS = 200;

interface TurnDoc {
  /** `${call id}:${seq, zero-padded}` */
  _id: string;
  call_id: string;
  account: string;
  /** The turn's number in the call, from 0. */
  seq: number;
  turn: Turn;
  created_at: Date;
  [k: string]: unknown;
}

const turnId = (callId: string, seq: number): string => `${callId}:${String(seq).padStart(6, '0')}`;

export class CallTranscripts {
  private readonly turns;

  constructor(
    store: Store,
    private readonly now: () => number,
  ) {
    this.turns = store.collection<TurnDoc>('voice_turns');
  }

  async init(): Promise<void> {
    await this.turns.createIndex({ keys: { call_id: 1, seq: 1 } });
  }

  /**
   * Records turn `seq` of the call; false when the transcript is full (MAX_TURNS: the turn is left
   * out). Idempotent: the same number written again is the same turn, kept once.
   */
  async append(callId: string, account: string, seq: number, turn: Turn): Promise<boolean> {
    if (seq >= MAX_TURNS) return false;
    try {
      await this.turns.insertOne({ _id: turnId(callId, seq), call_id: callId, account, seq, turn, created_at: new Date(this.now()) });
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
    return true;
  }

  /** The number after the call's last turn (for a turn its live side could not number: it died first). */
  async nextSeq(callId: string): Promise<number> {
    const [last] = await this.turns.find({ call_id: callId }, { sort: { seq: -1 }, limit: 1 });
    return last ? last.seq + 1 : 0;
  }

  /** The call's turns in order, for the account that pays for it. */
  async of(account: string, callId: string): Promise<Turn[]> {
    const docs = await this.turns.find({ call_id: callId, account }, { sort: { seq: 1 }, limit: MAX_TURNS });
    return docs.map((d) => d.turn);
  }

  /** Deletes the call's turns (its actor is being deleted). */
  async remove(callId: string): Promise<void> {
    await this.turns.deleteMany({ call_id: callId });
  }
}

/**
 * The call's actor as its live side sees it: a `turn` is numbered and appended to the transcript
 * before the actor is told (a turn the store refused is logged and still told: the view counts it
 * as left out). Every event goes through one queue, so the actor hears them in the order they
 * were sent, turns included.
 */
export function recordingTurns(
  actor: CallActor,
  transcript: { callId: string; account: string; turns: Pick<CallTranscripts, 'append'> },
  log: Logger,
): CallActor {
  let seq = 0;
  let queue: Promise<unknown> = Promise.resolve();
  return {
    send(event: VoiceCallEvent, opts) {
      const write =
        event.type === 'turn'
          ? transcript.turns
              .append(transcript.callId, transcript.account, seq++, event.turn)
              .catch((err: unknown) => log.error({ err }, 'a turn was not recorded in the transcript'))
          : null;
      const sent = queue.then(async () => {
        await write;
        return actor.send(event, opts);
      });
      queue = sent.catch(() => undefined);
      return sent;
    },
  };
}
