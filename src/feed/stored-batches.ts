import type { EventStore } from '../store/event-store.js';

/**
 * When this process's own inserts of events return: from then on their rows are visible,
 * and their ingested_at lies at or before the store's clock of that moment. The live tail
 * uses it to read right when those rows pass its horizon, instead of at the next poll.
 */
export interface StoredBatches {
  /** Calls `listener` with performance.now() each time an insert of events returns; returns what unsubscribes. */
  onStored(listener: (at: number) => void): () => void;
  /** The store, its inserts observed: give it to whatever ingests in this process. */
  observe(store: EventStore): EventStore;
}

export function createStoredBatches(): StoredBatches {
  const listeners = new Set<(at: number) => void>();
  return {
    onStored(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    observe(store) {
      return {
        async insertEvents(events) {
          await store.insertEvents(events);
          const at = performance.now();
          for (const listener of listeners) listener(at);
        },
        probeWrite: () => store.probeWrite(),
        listEvents: (query) => store.listEvents(query),
        tailHorizon: (settleMs) => store.tailHorizon(settleMs),
        tailEvents: (query) => store.tailEvents(query),
        tailProjects: (query) => store.tailProjects(query),
      };
    },
  };
}
