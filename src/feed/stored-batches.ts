import type { EventStore, StorableEvent } from '../store/event-store.js';

/**
 * When this process's own inserts of events end, and what they held. After one that
 * succeeded its rows are visible, and their ingested_at lies at or before the store's
 * clock of that moment: the live tail reads right when those rows pass its horizon,
 * instead of at the next poll. One that failed may still have stored some of its rows,
 * so listeners hear of it too: the first-page cache drops the pages of its projects, and
 * the tail makes one read more than it needed.
 */
export interface StoredBatches {
  /**
   * Calls `listener` with performance.now(), the insert's events and whether it succeeded
   * each time an insert of events ends; returns what unsubscribes.
   */
  onStored(listener: (at: number, events: readonly StorableEvent[], succeeded: boolean) => void): () => void;
  /** The store, its inserts observed: give it to whatever ingests in this process. */
  observe(store: EventStore): EventStore;
}

export function createStoredBatches(): StoredBatches {
  const listeners = new Set<(at: number, events: readonly StorableEvent[], succeeded: boolean) => void>();
  return {
    onStored(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    observe(store) {
      return {
        async insertEvents(events) {
          let succeeded = false;
          try {
            await store.insertEvents(events);
            succeeded = true;
          } finally {
            const at = performance.now();
            for (const listener of listeners) listener(at, events, succeeded);
          }
        },
        probeWrite: () => store.probeWrite(),
        listEvents: (query) => store.listEvents(query),
        tailHorizon: (settleMs) => store.tailHorizon(settleMs),
        tailEvents: (query) => store.tailEvents(query),
        tailProjects: (query) => store.tailProjects(query),
        changedProjects: (from, before, limit) => store.changedProjects(from, before, limit),
        writtenEvents: (from, before, limit) => store.writtenEvents(from, before, limit),
      };
    },
  };
}
