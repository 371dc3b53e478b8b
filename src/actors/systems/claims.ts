// Claims: taking custodial actors that nobody holds (their owner stopped, died or never existed,
// as for queued jobs), up to each kind's capacity per instance. Runs at start and every leaseMs/2.
import type { Filter } from '../../store/port.ts';
import type { ActorKind, ResumeMode } from '../kinds.ts';
import type { ActorDoc } from '../record.ts';
import type { Entry, Resources } from '../resources.ts';
import type { ClaimsPort, Systems } from './index.ts';

const PAGE = 200;

export class Claims implements ClaimsPort {
  /** Set by the runtime: runs a claim pass in the background (after an actor of a capped kind is done). */
  onFreed: (() => void) | null = null;

  constructor(
    private readonly res: Resources,
    private readonly sys: Systems,
  ) {}

  /** What a restored actor is told: `finalize` when a socket-bound actor lost the resources it lived on. */
  modeFor(entry: Entry, doc: ActorDoc): ResumeMode {
    return entry.kind.onOrphan === 'finalize' && !entry.resources && doc.custodial ? 'finalize' : 'resume';
  }

  /** Custodial actors of `kind` this instance holds in memory. */
  held(kind: ActorKind): number {
    let n = 0;
    for (const entry of this.res.entries.values()) if (entry.kind === kind && entry.actor && entry.owned && entry.doc?.custodial) n += 1;
    return n;
  }

  /** Room for one more custodial actor of `kind` here. */
  hasRoom(kind: ActorKind): boolean {
    return kind.capacity === undefined || this.held(kind) < kind.capacity;
  }

  freed(kind: ActorKind): void {
    if (kind.capacity !== undefined) this.onFreed?.();
  }

  /** Restores (and resumes) the custodial actors matching `filter` that this instance can take. */
  async claimWhere(filter: Filter): Promise<void> {
    for (const kind of this.res.kinds.values()) {
      let room = kind.capacity === undefined ? Infinity : kind.capacity - this.held(kind);
      let after: string | null = null;
      while (room > 0 && this.res.state === 'running') {
        const page: ActorDoc[] = await this.res.actors.find(
          { kind: kind.kind, custodial: true, status: 'active', ...filter, ...(after === null ? {} : { _id: { $gt: after } }) },
          { sort: { _id: 1 }, limit: Math.min(PAGE, room), projection: { _id: 1, actor_id: 1 } },
        );
        const taken = await Promise.all(
          page.map((doc) => {
            const entry = this.res.entry(kind, doc.actor_id);
            return this.sys.residency
              .run(entry, () => this.takeOver(entry))
              .catch((err: unknown) => {
                entry.log.warn({ err }, 'actor resume failed');
                return false;
              });
          }),
        );
        room -= taken.filter(Boolean).length;
        if (page.length < Math.min(PAGE, room + taken.filter(Boolean).length)) break;
        after = page[page.length - 1]!._id;
      }
    }
  }

  private async takeOver(entry: Entry): Promise<boolean> {
    if (!this.hasRoom(entry.kind) && !(entry.actor && entry.owned)) return false;
    const lease = entry.lease;
    const acquired = await this.sys.leases.acquire(entry, { custodial: true });
    if (!acquired) return false; // taken by someone else, or finished, meanwhile
    const { doc, previousOwner } = acquired;
    if (entry.actor && entry.lease === lease && entry.doc?.rev === doc.rev) {
      entry.doc = doc; // already running here under the same lease: it was only renewed
      return true;
    }
    const mode = this.modeFor(entry, doc);
    this.sys.residency.load(entry, doc, mode);
    this.res.metrics?.takeovers.inc({ kind: entry.kind.kind, mode });
    entry.log.info({ previous_owner: previousOwner, revision: doc.rev, mode }, 'actor resumed');
    await this.sys.inbox.drainOwned(entry);
    if (entry.actor && entry.dirty) await this.sys.persistence.persist(entry, 'resume');
    return true;
  }
}
