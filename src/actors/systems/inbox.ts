// The inbox: any instance can message any actor. A message for an actor held by another live
// instance is written to `actor_inbox` under a sequence number reserved on the actor's document;
// the owner applies messages in sequence order, once: the last applied number is written in the
// same conditional write as the snapshot that contains its effects, so a crash before that write
// replays the message and one after it skips it. A number reserved by a sender that died before
// writing its message is skipped after `inboxGapWaitMs` (a tombstone takes its place, so a late
// write fails and the sender retries with a new number). Owners hear of messages through the
// wake-ups (in process, or a MongoDB change stream) and a poll; a message for an actor whose owner
// is gone is applied by whoever takes the actor over (the poll adopts it).
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AnyEventObject } from 'xstate';
import { isDuplicateKeyError } from '../../store/port.ts';
import { ActorBusyError, ActorNotFoundError } from '../errors.ts';
import { inboxId, type InboxDoc } from '../record.ts';
import type { Entry, Resources } from '../resources.ts';
import type { Delivered, InboxPort, Systems } from './index.ts';

const BATCH = 100;

export class InboxSystem implements InboxPort {
  private unsubscribe: (() => void) | null = null;
  private readonly replyWaiters = new Map<string, () => void>();

  constructor(
    private readonly res: Resources,
    private readonly sys: Systems,
  ) {}

  start(): void {
    this.unsubscribe =
      this.res.wakeups?.subscribe((key) => {
        const waiter = this.replyWaiters.get(key);
        if (waiter) return waiter();
        const entry = this.res.entries.get(key);
        if (entry?.actor && entry.owned) this.drainSoon(entry);
      }) ?? null;
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    for (const wake of this.replyWaiters.values()) wake();
  }

  /** Writes a message for the actor's owner; returns its id. Throws ActorNotFoundError. */
  async post(entry: Entry, event: AnyEventObject, ask: boolean): Promise<string> {
    const body = JSON.stringify(event);
    for (;;) {
      const reserved = await this.res.actors.findOneAndUpdate(
        { _id: entry.key },
        { $inc: { inbox_next: 1 } },
        { returnDocument: 'after', projection: { inbox_next: 1 } },
      );
      if (!reserved) throw new ActorNotFoundError(entry.kind.kind, entry.id);
      const seq = reserved.inbox_next as number;
      const doc: InboxDoc = {
        _id: inboxId(entry.key, seq),
        key: entry.key,
        seq,
        event: body,
        ask,
        status: 'pending',
        from: this.res.me,
        created_at: new Date(this.res.now()),
      };
      try {
        await this.res.inbox.insertOne(doc);
      } catch (err) {
        if (isDuplicateKeyError(err)) continue; // the owner gave up waiting for this number: take another
        throw err;
      }
      this.res.wakeups?.notify(entry.key);
      return doc._id;
    }
  }

  /**
   * Waits until the message is applied (its reply written) or `timeoutMs` passes. While waiting,
   * takes the actor over itself if its owner's lease ends (the owner died), which applies the
   * message here. On time-out a message still pending is withdrawn (it will never apply) and
   * ActorBusyError is thrown; one already taken by the owner is waited for a while longer.
   * Deletes the message once its reply is read.
   */
  async awaitApplied(entry: Entry, messageId: string, timeoutMs: number): Promise<Delivered> {
    let giveUpAt = performance.now() + timeoutMs;
    let withdrawn = false;
    for (let backoff = 2; ; backoff = Math.min(backoff * 2, 100)) {
      const msg = await this.res.inbox.findOne({ _id: messageId });
      if (!msg) throw new ActorNotFoundError(entry.kind.kind, entry.id);
      if (msg.status === 'applied' || msg.status === 'failed') {
        await this.res.inbox.deleteOne({ _id: messageId });
        if (msg.status === 'failed') throw new ActorNotFoundError(entry.kind.kind, entry.id);
        return { emitted: msg.reply ? (JSON.parse(msg.reply) as AnyEventObject[]) : [] };
      }
      const actor = await this.res.actors.findOne({ _id: entry.key }, { projection: { owner: 1, lease_until: 1, status: 1 } });
      if (!actor) throw new ActorNotFoundError(entry.kind.kind, entry.id);
      const orphaned = actor.owner === null || (actor.lease_until !== null && actor.lease_until.getTime() <= this.res.now());
      if (orphaned || actor.status !== 'active') {
        await this.sys.residency.run(entry, () => this.adopt(entry));
        continue;
      }
      const left = giveUpAt - performance.now();
      if (left <= 0) {
        if (withdrawn) throw new ActorBusyError(entry.kind.kind, entry.id, actor.owner);
        const { matchedCount } = await this.res.inbox.updateOne({ _id: messageId, status: 'pending' }, { $set: { status: 'withdrawn' } });
        if (matchedCount === 1) throw new ActorBusyError(entry.kind.kind, entry.id, actor.owner); // the owner skips it and deletes it
        withdrawn = true; // the owner is applying it: give it one more period
        giveUpAt = performance.now() + timeoutMs;
        continue;
      }
      await this.waitForReply(messageId, Math.min(backoff, left));
    }
  }

  /** Takes the actor (when nobody live holds it) and applies its messages; marks them failed when it is finished. */
  async adopt(entry: Entry): Promise<void> {
    const unowned = await this.sys.leases.own(entry, 0).catch((err: unknown) => {
      if (err instanceof ActorNotFoundError) return { missing: true } as const;
      throw err;
    });
    if (unowned && ('finished' in unowned || 'missing' in unowned)) {
      await this.res.inbox.updateMany(
        { key: entry.key, status: { $in: ['pending', 'taken'] } },
        { $set: { status: 'failed', error: 'the actor is finished or gone' } },
      );
      const pending = await this.res.inbox.find({ key: entry.key, status: 'failed' }, { projection: { _id: 1 }, limit: BATCH });
      for (const m of pending) this.res.wakeups?.notify(m._id);
    }
    // Held here now (own drained the inbox), or busy elsewhere: its owner drains it.
  }

  /** Owners look for messages they were not woken for; messages of ownerless actors are adopted. */
  async poll(): Promise<void> {
    const pending = await this.res.inbox.find({ status: { $in: ['pending', 'taken'] } }, { sort: { created_at: 1 }, limit: 500, projection: { key: 1 } });
    const keys = new Set(pending.map((m) => m.key));
    for (const key of keys) {
      const entry = this.res.entries.get(key);
      if (entry?.actor && entry.owned) {
        this.drainSoon(entry);
        continue;
      }
      const kindName = key.slice(0, key.indexOf(':'));
      const kind = this.res.kindOf(kindName);
      if (!kind) continue;
      const actor = await this.res.actors.findOne({ _id: key }, { projection: { owner: 1, lease_until: 1, status: 1 } });
      const orphaned =
        actor?.status !== 'active' ||
        actor.owner === null ||
        actor.owner === this.res.me ||
        (actor.lease_until !== null && actor.lease_until.getTime() <= this.res.now());
      if (!orphaned) continue;
      const adopted = this.res.entry(kind, key.slice(kindName.length + 1));
      await this.sys.residency.run(adopted, () => this.adopt(adopted)).catch((err: unknown) => adopted.log.warn({ err }, 'inbox adoption failed'));
    }
  }

  private drainSoon(entry: Entry): void {
    void this.sys.residency
      .run(entry, async () => {
        if (entry.actor && this.sys.leases.held(entry)) await this.drainOwned(entry);
        else await this.adopt(entry);
      })
      .catch((err: unknown) => entry.log.warn({ err }, 'inbox drain failed'));
  }

  /**
   * Applies the actor's pending messages in order (inside its mailbox, with its lease held), writes
   * the snapshot with the last applied number, then posts the replies.
   */
  async drainOwned(entry: Entry): Promise<void> {
    for (;;) {
      if (!entry.actor) return;
      const found = await this.res.inbox.find({ key: entry.key, seq: { $gt: entry.inboxApplied } }, { sort: { seq: 1 }, limit: BATCH });
      if (found.length === 0) return;
      // Taken before applied: a sender that gave up can withdraw only a message nobody took.
      const last = found[found.length - 1]!.seq;
      await this.res.inbox.updateMany({ key: entry.key, seq: { $gt: entry.inboxApplied, $lte: last }, status: 'pending' }, { $set: { status: 'taken' } });
      const messages = await this.res.inbox.find({ key: entry.key, seq: { $gt: entry.inboxApplied, $lte: last } }, { sort: { seq: 1 }, limit: BATCH });
      const replies: Array<{ id: string; ask: boolean; emitted: AnyEventObject[] }> = [];
      let retry = false;
      for (const m of messages) {
        if (m.seq !== entry.inboxApplied + 1) {
          if (!(await this.skipGap(entry, m.seq))) {
            retry = true;
            break;
          }
        }
        entry.inboxApplied = m.seq;
        entry.dirty = true;
        if (m.status !== 'taken' || m.event === null) continue; // skipped, or withdrawn by its sender
        const actor = entry.actor;
        if (actor?.getSnapshot().status !== 'active') {
          replies.push({ id: m._id, ask: m.ask, emitted: [] });
          continue;
        }
        entry.emitted = [];
        this.sys.residency.quietly(entry, () => actor.send(JSON.parse(m.event!) as AnyEventObject));
        replies.push({ id: m._id, ask: m.ask, emitted: entry.emitted });
        entry.emitted = null;
        this.res.metrics?.inboxLagSeconds.observe({ kind: entry.kind.kind }, Math.max(0, this.res.now() - m.created_at.getTime()) / 1000);
      }
      if (entry.dirty && entry.actor) await this.sys.persistence.persist(entry, 'inbox');
      for (const r of replies) {
        if (r.ask) await this.res.inbox.updateOne({ _id: r.id }, { $set: { status: 'applied', reply: JSON.stringify(r.emitted) } });
        else await this.res.inbox.deleteOne({ _id: r.id });
        this.res.wakeups?.notify(r.id);
      }
      await this.res.inbox.deleteMany({ key: entry.key, status: { $in: ['skipped', 'withdrawn'] }, seq: { $lte: entry.inboxApplied } });
      if (retry || found.length < BATCH) {
        if (retry) this.retryLater(entry);
        return;
      }
    }
  }

  /**
   * A gap before `seq`: a number reserved by a sender that has not written (yet). Waits for it a
   * while; then tombstones the missing numbers (a late writer then takes a new one). Returns true
   * when the gap is closed.
   */
  private async skipGap(entry: Entry, seq: number): Promise<boolean> {
    const now = this.res.now();
    if (entry.inboxGapSince === 0) entry.inboxGapSince = now;
    if (now - entry.inboxGapSince < this.res.inboxGapWaitMs) return false;
    for (let s = entry.inboxApplied + 1; s < seq; s++) {
      try {
        await this.res.inbox.insertOne({
          _id: inboxId(entry.key, s),
          key: entry.key,
          seq: s,
          event: null,
          ask: false,
          status: 'skipped',
          from: this.res.me,
          created_at: new Date(now),
        });
      } catch (err) {
        if (isDuplicateKeyError(err)) return false; // it arrived after all: apply it in order
        throw err;
      }
      entry.log.warn({ seq: s }, 'inbox message never written by its sender: skipped');
    }
    entry.inboxGapSince = 0;
    return true;
  }

  private retryLater(entry: Entry): void {
    const timer = setTimeout(() => this.drainSoon(entry), Math.max(10, this.res.inboxGapWaitMs / 4));
    timer.unref();
  }

  private async waitForReply(messageId: string, ms: number): Promise<void> {
    if (!this.res.wakeups) return sleep(ms);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.replyWaiters.set(messageId, () => {
        this.replyWaiters.delete(messageId);
        done();
      });
    });
    this.replyWaiters.delete(messageId);
  }
}
