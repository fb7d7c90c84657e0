/**
 * Coalesces concurrent writes into one flush. While a flush runs, new writes queue up;
 * when it ends, everything queued goes out together. An idle writer flushes at once, so
 * batching adds no latency when there is no contention. Every writer's promise settles
 * with the outcome of the flush that carried its items.
 */
export interface GroupCommit<T> {
  write(items: readonly T[]): Promise<void>;
  /** Resolves when nothing is queued or in flight. */
  drain(): Promise<void>;
}

interface Pending<T> {
  items: readonly T[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

export function createGroupCommit<T>(
  flush: (items: T[]) => Promise<void>,
  options: { maxItems?: number } = {},
): GroupCommit<T> {
  const maxItems = options.maxItems ?? 50_000;
  let queue: Pending<T>[] = [];
  let running: Promise<void> | undefined;

  async function run(): Promise<void> {
    while (queue.length > 0) {
      const batch: Pending<T>[] = [];
      let count = 0;
      while (queue.length > 0 && (batch.length === 0 || count + queue[0]!.items.length <= maxItems)) {
        const next = queue.shift()!;
        batch.push(next);
        count += next.items.length;
      }
      try {
        await flush(batch.flatMap((p) => p.items));
        for (const p of batch) p.resolve();
      } catch (error) {
        for (const p of batch) p.reject(error);
      }
    }
    running = undefined;
  }

  return {
    write(items) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ items, resolve, reject });
        running ??= run();
      });
    },
    async drain() {
      while (running !== undefined) await running;
    },
  };
}
