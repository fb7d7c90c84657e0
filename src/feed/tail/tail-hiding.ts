import type { CanonicalEvent } from '../../generated/schema-types.js';
import type { EventStore, TailBatch } from '../../store/event-store.js';

/** Whether a stored event must not be streamed: an erased scope's (docs/decisions/erasure.md). */
export type HiddenEvent = (event: CanonicalEvent) => boolean;

/**
 * The store as the live tail reads it, without hidden events. Every row a stream is sent
 * comes from one of these two reads (a stream's own, the shared one and a join's), so a
 * live stream, a resume from Last-Event-ID and a join alike never carry an erased event,
 * from the moment the process knows of the erasure until its rows are gone from the store.
 * A batch keeps its position and fullness: the stream moves on past a hidden row as past any other.
 */
export function hidingFrom(store: EventStore, hidden: HiddenEvent): EventStore {
  const without = (batch: TailBatch): TailBatch => {
    const events = batch.events.filter((e) => !hidden(e.event));
    return events.length === batch.events.length ? batch : { ...batch, events };
  };
  return {
    ...store,
    tailEvents: async (query) => without(await store.tailEvents(query)),
    tailProjects: async (query) => without(await store.tailProjects(query)),
  };
}
