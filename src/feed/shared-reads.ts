/**
 * Overlapping reads with one key share one run: the first caller starts it, and every
 * caller that comes while it is running gets its outcome. Nothing is kept once it
 * settles, so a later caller always starts a fresh run; a joining caller sees what it
 * would have seen had it come a few milliseconds earlier, never anything older.
 */
export interface SharedReads<T> {
  read(key: string, run: () => Promise<T>): Promise<T>;
  /** Runs in flight, for tests. */
  readonly running: number;
}

export function createSharedReads<T>(): SharedReads<T> {
  const inFlight = new Map<string, Promise<T>>();
  return {
    read(key, run) {
      const running = inFlight.get(key);
      if (running !== undefined) return running;
      const started = run().finally(() => inFlight.delete(key));
      inFlight.set(key, started);
      return started;
    },
    get running() {
      return inFlight.size;
    },
  };
}
