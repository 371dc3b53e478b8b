// Steps: side effects that must happen once per actor (a paid provider call, a charge), recorded
// in `actor_steps` under the epoch of the lease they ran in. A replay after a crash or a takeover
// finds a done step and gets its recorded result; a step whose owner lost the actor is aborted
// (its lease's signal) and its result is refused (the record is conditional on the epoch).
import { StepFencedError } from '../errors.ts';
import type { LeaseScope } from '../kinds.ts';
import { stepId, type StepDoc } from '../record.ts';
import type { Entry, Resources } from '../resources.ts';
import type { StepsPort, Systems } from './index.ts';

export class Steps implements StepsPort {
  constructor(
    private readonly res: Resources,
    private readonly sys: Systems,
  ) {}

  async done<T>(entry: Entry, step: string): Promise<T | undefined> {
    const existing = await this.res.steps.findOne({ _id: stepId(entry.key, step) });
    return existing?.status === 'done' ? (JSON.parse(existing.result ?? 'null') as T) : undefined;
  }

  async once<T>(entry: Entry, step: string, work: (scope: LeaseScope) => Promise<T>): Promise<T> {
    const scope = this.sys.leases.scope(entry);
    const id = stepId(entry.key, step);
    const fenced = () => new StepFencedError(entry.key, step, scope.epoch);
    if (scope.signal.aborted) throw fenced();
    for (;;) {
      const existing = await this.res.steps.findOne({ _id: id });
      if (existing?.status === 'done') return JSON.parse(existing.result ?? 'null') as T;
      if (existing && existing.epoch > scope.epoch) throw fenced();
      if (!existing) {
        const doc: StepDoc = { _id: id, key: entry.key, epoch: scope.epoch, owner: this.res.me, status: 'running', started_at: new Date(this.res.now()) };
        try {
          await this.res.steps.insertOne(doc);
        } catch {
          continue; // another writer recorded it meanwhile: read it again
        }
      } else if (existing.epoch < scope.epoch) {
        // Started under an older lease that was lost before it recorded a result: ours now.
        const taken = await this.res.steps.updateOne(
          { _id: id, epoch: existing.epoch, status: 'running' },
          { $set: { epoch: scope.epoch, owner: this.res.me } },
        );
        if (taken.matchedCount === 0) continue;
      }
      break;
    }
    // The store's word on ownership, not only this instance's: a stalled owner learns it here.
    const current = await this.res.actors.findOne({ _id: entry.key, owner: this.res.me, epoch: scope.epoch }, { projection: { _id: 1 } });
    if (!current || scope.signal.aborted) throw fenced();
    const result = await work(scope);
    const recorded = await this.res.steps.updateOne(
      { _id: id, epoch: scope.epoch, status: 'running' },
      { $set: { status: 'done', result: JSON.stringify(result ?? null), done_at: new Date(this.res.now()) } },
    );
    if (recorded.matchedCount === 0) throw fenced();
    return result;
  }
}
