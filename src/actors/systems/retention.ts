// Retention: the sweep deletes, per kind, the finished and the expired idle actors its retention
// names (a page each sweep), with their steps and inbox messages, and the asks nobody collected.
import type { Filter } from '../../store/port.ts';
import type { Resources } from '../resources.ts';
import type { RetentionPort, Systems } from './index.ts';

/** An applied ask whose sender never collected the reply (it gave up, or died) is deleted after this. */
const UNCOLLECTED_MS = 10 * 60_000;

export class Retention implements RetentionPort {
  constructor(
    private readonly res: Resources,
    private readonly sys: Systems,
  ) {}

  async expire(): Promise<void> {
    const now = this.res.now();
    for (const kind of this.res.kinds.values()) {
      if (kind.retainFinishedMs !== undefined) {
        await this.deleteStale(
          { kind: kind.kind, status: { $in: ['done', 'error'] }, updated_at: { $lt: new Date(now - kind.retainFinishedMs) } },
          kind.onRetired,
        );
      }
      if (kind.expireIdleMs !== undefined) {
        await this.deleteStale({ kind: kind.kind, status: 'active', custodial: false, updated_at: { $lt: new Date(now - kind.expireIdleMs) } });
      }
    }
    await this.res.inbox.deleteMany({ status: { $in: ['applied', 'failed'] }, created_at: { $lt: new Date(now - UNCOLLECTED_MS) } });
  }

  private async deleteStale(filter: Filter, onRetired?: (id: string) => Promise<void>): Promise<void> {
    const stale = await this.res.actors.find(filter, { limit: 500, projection: { _id: 1, rev: 1, actor_id: 1 } });
    for (const doc of stale) {
      const entry = this.res.entries.get(doc._id);
      // A copy in memory that is busy, owned or unsaved is in use: leave it for a later sweep.
      if (entry && !this.sys.residency.evict(entry)) continue;
      // What the actor kept elsewhere goes first: a crash after it leaves the actor for the next sweep.
      if (onRetired) await onRetired(doc.actor_id);
      // Conditional on the revision: an actor that moved since it was read is not deleted.
      const { deletedCount } = await this.res.actors.deleteOne({ _id: doc._id, rev: doc.rev, custodial: false });
      if (deletedCount === 1) {
        await this.res.steps.deleteMany({ key: doc._id });
        await this.res.inbox.deleteMany({ key: doc._id });
      }
    }
  }
}
