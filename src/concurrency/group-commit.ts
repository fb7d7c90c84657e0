/**
 * Coalesces concurrent writes into one flush. While a flush runs, new writes queue up;
 * when it ends, everything queued goes out together. Without `lingerMs` an idle writer
 * flushes at once, so batching adds no latency when there is no contention; with it, a
 * batch waits up to that long to fill to `maxItems` (the ingest consumer's size-or-time
 * batching). Every writer's promise settles with the outcome of the flush that carried
 * its items.
 */
export interface GroupCommit<T> {
  write(items: readonly T[]): Promise<void>;
  /** Flushes what is lingering and resolves when nothing is queued or in flight. */
  drain(): Promise<void>;
}

export interface GroupCommitOptions<T> {
  /** Most items in one flush; a backlog is split. A single larger write still goes out whole. */
  readonly maxItems?: number;
  /** How long a partial batch waits for more items before it is flushed. */
  readonly lingerMs?: number;
  /**
   * True for an error that is a verdict on the items rather than on the sink (a row the
   * store refuses). A flush that carried several writes and failed so is redone write by
   * write, so no writer is told its own items were refused for a neighbour's.
   */
  readonly isolate?: (error: unknown) => boolean;
  /**
   * What one item weighs (its bytes, say), and the most one flush may carry: a backlog is
   * split so that no flush passes `maxWeight`, as it is by `maxItems`. A single write
   * heavier than that still goes out whole, in a flush of its own.
   */
  readonly weigh?: (item: T) => number;
  readonly maxWeight?: number;
  /**
   * Flushes that may run at once (1 unless set). With 2, the next batch is prepared while
   * the sink works on the previous one; each writer still settles with its own flush.
   */
  readonly concurrency?: number;
}

interface Pending<T> {
  items: readonly T[];
  weight: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export function createGroupCommit<T>(flush: (items: T[]) => Promise<void>, options: GroupCommitOptions<T> = {}): GroupCommit<T> {
  const maxItems = options.maxItems ?? 50_000;
  const lingerMs = options.lingerMs ?? 0;
  const concurrency = options.concurrency ?? 1;
  const queue: Pending<T>[] = [];
  let queued = 0;
  let queuedWeight = 0;
  const running = new Set<Promise<void>>();
  let timer: NodeJS.Timeout | undefined;

  const weigh = options.weigh;
  const maxWeight = options.maxWeight ?? Infinity;

  function fitsBatch(count: number, weight: number, next: Pending<T>): boolean {
    return count + next.items.length <= maxItems && weight + next.weight <= maxWeight;
  }

  function takeBatch(): Pending<T>[] {
    const batch: Pending<T>[] = [];
    let count = 0;
    let weight = 0;
    while (queue.length > 0 && (batch.length === 0 || fitsBatch(count, weight, queue[0]!))) {
      const next = queue.shift()!;
      batch.push(next);
      count += next.items.length;
      weight += next.weight;
    }
    queued -= count;
    queuedWeight -= weight;
    return batch;
  }

  async function flushEach(batch: readonly Pending<T>[]): Promise<void> {
    for (const p of batch) {
      try {
        await flush([...p.items]);
        p.resolve();
      } catch (error) {
        p.reject(error);
      }
    }
  }

  /** Never rejects: every outcome goes to the writers of the batch. */
  async function flushBatch(batch: readonly Pending<T>[]): Promise<void> {
    try {
      await flush(batch.flatMap((p) => p.items));
      for (const p of batch) p.resolve();
    } catch (error) {
      if (batch.length > 1 && options.isolate?.(error) === true) await flushEach(batch);
      else for (const p of batch) p.reject(error);
    }
  }

  function startNow(): void {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (queue.length === 0 || running.size >= concurrency) return;
    const flight: Promise<void> = flushBatch(takeBatch()).finally(() => {
      running.delete(flight);
      schedule();
    });
    running.add(flight);
    schedule();
  }

  function schedule(): void {
    if (queue.length === 0 || running.size >= concurrency) return;
    if (lingerMs === 0 || queued >= maxItems || queuedWeight >= maxWeight) startNow();
    else timer ??= setTimeout(startNow, lingerMs);
  }

  return {
    write(items) {
      return new Promise<void>((resolve, reject) => {
        let weight = 0;
        if (weigh !== undefined) for (const item of items) weight += weigh(item);
        queue.push({ items, weight, resolve, reject });
        queued += items.length;
        queuedWeight += weight;
        schedule();
      });
    },
    async drain() {
      for (;;) {
        if (queue.length > 0 && running.size < concurrency) startNow();
        else if (running.size > 0) await Promise.race(running);
        else return;
      }
    },
  };
}
