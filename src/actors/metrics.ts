// The runtime's own metrics (prom-client), registered in the app's registry by the composition root.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface RuntimeMetrics {
  /** Tasks queued or running in actor mailboxes, summed over actors, sampled at scrape. */
  mailboxDepth: Gauge<string>;
  /** Snapshot writes by kind and why (event, checkpoint, change, inbox, stop). */
  persistSeconds: Histogram<'kind' | 'reason'>;
  /** Leases this instance holds (custodial actors and idle ones in their grace), at scrape. */
  leasesHeld: Gauge<string>;
  /** Writes refused because another writer moved the actor. */
  conflicts: Counter<'kind'>;
  /** Actors taken over from another instance (or from this one's previous life). */
  takeovers: Counter<'kind' | 'mode'>;
  /** Leases lost while held (renewal failed or another instance took the actor). */
  leasesLost: Counter<'kind'>;
  /** Time from an inbox message's write to its application by the owner. */
  inboxLagSeconds: Histogram<'kind'>;
  /** Snapshots written over their kind's size limit (not refusable: already acted on). */
  oversized: Counter<'kind'>;
}

export function createRuntimeMetrics(registry: Registry, sample: () => { mailboxDepth: number; leasesHeld: number }): RuntimeMetrics {
  const registers = [registry];
  return {
    mailboxDepth: new Gauge({
      name: 'gateway_actor_mailbox_depth',
      help: 'Tasks queued or running in actor mailboxes on this instance.',
      registers,
      collect() {
        this.set(sample().mailboxDepth);
      },
    }),
    persistSeconds: new Histogram({
      name: 'gateway_actor_persist_seconds',
      help: 'Actor snapshot writes by kind and reason.',
      labelNames: ['kind', 'reason'] as const,
      buckets: [0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
      registers,
    }),
    leasesHeld: new Gauge({
      name: 'gateway_actor_leases_held',
      help: 'Actor leases held by this instance.',
      registers,
      collect() {
        this.set(sample().leasesHeld);
      },
    }),
    conflicts: new Counter({
      name: 'gateway_actor_conflicts_total',
      help: 'Actor writes refused because another writer moved the actor.',
      labelNames: ['kind'] as const,
      registers,
    }),
    takeovers: new Counter({
      name: 'gateway_actor_takeovers_total',
      help: 'Actors restored by this instance after their owner stopped or died, by resume mode.',
      labelNames: ['kind', 'mode'] as const,
      registers,
    }),
    leasesLost: new Counter({
      name: 'gateway_actor_leases_lost_total',
      help: 'Actor leases lost while held (renewal failed or another instance took over).',
      labelNames: ['kind'] as const,
      registers,
    }),
    inboxLagSeconds: new Histogram({
      name: 'gateway_actor_inbox_lag_seconds',
      help: 'Time from an inbox message being written to its application by the owning instance.',
      labelNames: ['kind'] as const,
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    oversized: new Counter({
      name: 'gateway_actor_oversized_writes_total',
      help: 'Actor snapshots written over their size limit (changes already acted on are never dropped).',
      labelNames: ['kind'] as const,
      registers,
    }),
  };
}
