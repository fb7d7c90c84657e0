import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import type { VisibleObserver } from './event-ingestor.js';

/**
 * Seconds from `fromMs` to `toMs`, or undefined when `fromMs` is no time. Never negative: a
 * producer's clock ahead of ours does not make an event visible before it was sent, and a
 * negative observation would land in the lowest bucket anyway, as if it were fast.
 */
export function ageSeconds(fromMs: number, toMs: number): number | undefined {
  if (!Number.isFinite(fromMs)) return undefined;
  return Math.max(0, toMs - fromMs) / 1000;
}

/** What the unread-age tracker needs of a fetched batch. */
export interface FetchedBatch {
  /** The Kafka timestamp (ms) of its oldest message: unread until the store acknowledges it. */
  readonly oldestMs: number;
  /** The Kafka timestamp (ms) of its last message: no later message of the partition is older than this, as far as the consumer can know. */
  readonly lastMs: number;
  /** Messages of the partition past this batch when it was fetched (the high watermark's distance). */
  readonly behind: number;
}

interface PartitionState {
  /** Fetched batches not yet acknowledged by the store, in fetch order. */
  pending: FetchedBatch[];
  /** What lies past the pending batches: nothing (caught up), or messages no older than this (ms). */
  after: 'caught-up' | number;
}

/**
 * Per partition, the Kafka timestamp of the oldest message not yet visible in the store,
 * from what each fetch tells: its oldest message's timestamp and the high watermark.
 *
 * - A fetched batch is unread until the store acknowledges it; the oldest pending batch's
 *   oldest message is the partition's oldest unread.
 * - With none pending, the last fetch decides: if it reached the high watermark the
 *   partition is caught up (its oldest unread is "now", an age of 0); if not, the next
 *   message is unknown and the last fetched message's timestamp stands in for it. That
 *   overstates the age until the next fetch, never understates it.
 * - A partition with no fetch yet in this assignment is not known, and not reported.
 */
export class UnreadTracker {
  readonly #partitions = new Map<string, PartitionState>();

  /** Records a fetched batch; the returned function marks it acknowledged by the store. */
  fetched(partition: string, batch: FetchedBatch): () => void {
    let state = this.#partitions.get(partition);
    if (state === undefined) {
      state = { pending: [], after: 'caught-up' };
      this.#partitions.set(partition, state);
    }
    const held = state;
    held.pending.push(batch);
    held.after = batch.behind > 0 ? batch.lastMs : 'caught-up';
    return () => {
      // Batches of a partition may be acknowledged out of order (two inserts run at once); each leaves alone.
      const at = held.pending.indexOf(batch);
      if (at >= 0) held.pending.splice(at, 1);
    };
  }

  /**
   * A new assignment: partitions no longer held are forgotten. A held partition's pending
   * batches are delivered again from its committed offset, so they are dropped as batches
   * but their oldest message stays its oldest unread until a fetch says otherwise.
   */
  assigned(partitions: ReadonlySet<string>): void {
    for (const [name, state] of this.#partitions) {
      if (!partitions.has(name)) {
        this.#partitions.delete(name);
        continue;
      }
      const oldest = oldestPending(state.pending);
      if (oldest !== undefined) state.after = oldest;
      state.pending = [];
    }
  }

  /** The Kafka timestamp (ms) of the partition's oldest unread message; `nowMs` when caught up; undefined when not known. */
  oldestUnreadMs(partition: string, nowMs: number): number | undefined {
    const state = this.#partitions.get(partition);
    if (state === undefined) return undefined;
    const oldest = oldestPending(state.pending);
    if (oldest !== undefined) return Math.min(oldest, nowMs);
    return state.after === 'caught-up' ? nowMs : Math.min(state.after, nowMs);
  }

  /** The partitions known, by name. */
  known(): IterableIterator<string> {
    return this.#partitions.keys();
  }
}

function oldestPending(pending: readonly FetchedBatch[]): number | undefined {
  let oldest: number | undefined;
  for (const { oldestMs } of pending) if (Number.isFinite(oldestMs)) oldest = Math.min(oldest ?? oldestMs, oldestMs);
  return oldest;
}

/** The Kafka timestamps (ms) a fetched batch's messages carry: its oldest, and its last. */
export function batchTimestamps(messages: readonly { readonly timestamp: string }[]): { oldestMs: number; lastMs: number } {
  let oldestMs = Number.NaN;
  for (const { timestamp } of messages) {
    const ms = Number(timestamp);
    if (Number.isFinite(ms) && !(ms >= oldestMs)) oldestMs = ms;
  }
  const lastMs = Number(messages.at(-1)?.timestamp);
  return { oldestMs, lastMs: Number.isFinite(lastMs) ? lastMs : oldestMs };
}

export interface Freshness {
  /** Observes one event the store has acknowledged, at `visibleAtMs`: its age from its Kafka timestamp and from its occurred_at. */
  readonly visible: VisibleObserver;
  /** Records a fetched batch of `topic`/`partition`; the returned function marks it acknowledged. */
  fetched(topic: string, partition: number, messages: readonly { readonly timestamp: string }[], behind: number): () => void;
  /** A new assignment, by partition name (`topic/partition`): series of the partitions no longer held are removed. */
  assigned(partitions: ReadonlySet<string>): void;
  /** Sets the per-partition gauges from what is known now; called on the consumer's watch tick. */
  report(nowMs?: number): void;
}

const labelsOf = (name: string) => {
  const slash = name.lastIndexOf('/');
  return { topic: name.slice(0, slash), partition: name.slice(slash + 1) };
};

/** The ingest consumer's freshness figures on /metrics (docs/decisions/freshness-metrics.md). */
export function createFreshness(metrics: GatewayMetrics): Freshness {
  const unread = new UnreadTracker();
  return {
    visible: (message, head, visibleAtMs) => {
      if (message.timestamp !== undefined) {
        const fromKafka = ageSeconds(Number(message.timestamp), visibleAtMs);
        if (fromKafka !== undefined) metrics.visibleAgeFromKafka.observe(fromKafka);
      }
      const fromOccurred = ageSeconds(Date.parse(head.occurred_at), visibleAtMs);
      if (fromOccurred !== undefined) metrics.visibleAgeFromOccurredAt.observe(fromOccurred);
    },
    fetched(topic, partition, messages, behind) {
      return unread.fetched(`${topic}/${partition}`, { ...batchTimestamps(messages), behind });
    },
    assigned(partitions) {
      for (const name of unread.known()) {
        if (partitions.has(name)) continue;
        metrics.consumerLagSeconds.remove(labelsOf(name));
        metrics.oldestUnreadTimestamp.remove(labelsOf(name));
      }
      unread.assigned(partitions);
    },
    report(nowMs = Date.now()) {
      for (const name of unread.known()) {
        const oldest = unread.oldestUnreadMs(name, nowMs);
        if (oldest === undefined) continue;
        metrics.oldestUnreadTimestamp.set(labelsOf(name), oldest / 1000);
        metrics.consumerLagSeconds.set(labelsOf(name), (nowMs - oldest) / 1000);
      }
    },
  };
}
