import type { StorableEvent } from './event-store.js';

/**
 * The most monthly partitions of the events table one insert may span. Each is a part
 * written, with its indexes and projection: about 80 ms a part on chDB here, so a backfill
 * of 100 months in one insert took 8 s and one of 240 did not fit the server's 10 s request
 * timeout. Live telemetry spans one or two.
 */
export const MAX_PARTITIONS_PER_INSERT = 16;

/**
 * ClickHouse refuses an insert block over `max_partitions_per_insert_block` (TOO_MANY_PARTS,
 * a code that otherwise means an overloaded table). INSERT_SETTINGS sets it on purpose, to
 * the engine's own default, so that a server profile cannot lower it under the split above.
 */
export const ENGINE_MAX_PARTITIONS_PER_INSERT = 100;

/** The events table's partition of an event: toYYYYMM(occurred_at), read off the stored text. */
const monthOf = (event: StorableEvent): string => event.storedAt.slice(0, 7);

/**
 * The events in inserts that each span at most `maxPartitions` months, so that a backfill
 * (one device's twenty years, a backlog of many devices' history) is stored, in as few
 * inserts as the limit allows. A batch within the limit is returned as it is.
 */
export function splitByPartitions(events: readonly StorableEvent[], maxPartitions = MAX_PARTITIONS_PER_INSERT): (readonly StorableEvent[])[] {
  // Most batches lie in one or two months: counting them makes a string only where the month changes.
  const months = new Set<string>();
  let last = '';
  for (const event of events) {
    if (last !== '' && event.storedAt.startsWith(last)) continue;
    last = monthOf(event);
    months.add(last);
  }
  if (months.size <= maxPartitions) return [events];
  const byMonth = new Map<string, StorableEvent[]>();
  for (const event of events) {
    const month = monthOf(event);
    const group = byMonth.get(month);
    if (group === undefined) byMonth.set(month, [event]);
    else group.push(event);
  }
  const groups = [...byMonth.values()];
  const inserts: StorableEvent[][] = [];
  for (let i = 0; i < groups.length; i += maxPartitions) inserts.push(groups.slice(i, i + maxPartitions).flat());
  return inserts;
}
