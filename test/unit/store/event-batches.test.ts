import { expect } from 'chai';
import type { StorableEvent } from '../../../src/store/event-store.js';
import { ENGINE_MAX_PARTITIONS_PER_INSERT, MAX_PARTITIONS_PER_INSERT, splitByPartitions } from '../../../src/store/event-batches.js';
import { INSERT_SETTINGS } from '../../../src/store/sql-transport.js';
import { toStoreTimestamp } from '../../../src/store/timestamps.js';
import { canonicalEvent } from '../../support/factories.js';

/** One event a month from `from` on, `months` of them: a device's history sent at once. */
function backfill(from: Date, months: number): StorableEvent[] {
  return Array.from({ length: months }, (_, i) => {
    const at = new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + i, 15, 12));
    const event = canonicalEvent({ occurred_at: at.toISOString() });
    return { event, head: event, storedAt: toStoreTimestamp(event.occurred_at) };
  });
}

const monthsOf = (events: readonly StorableEvent[]) => new Set(events.map((e) => e.storedAt.slice(0, 7)));

describe('event inserts by partition', () => {
  it('leaves a batch within the limit as one insert, untouched', () => {
    const events = backfill(new Date('2020-01-01T00:00:00Z'), MAX_PARTITIONS_PER_INSERT);
    const inserts = splitByPartitions(events);
    expect(inserts).to.have.length(1);
    expect(inserts[0]).to.equal(events);
  });

  it('splits twenty years of one device into inserts of at most the limit of months, with every event once', () => {
    const events = backfill(new Date('2006-01-01T00:00:00Z'), 240);
    // Two events of one month far apart in the batch go to the same insert.
    events.push(...backfill(new Date('2006-01-01T00:00:00Z'), 1));
    const inserts = splitByPartitions(events);
    expect(inserts).to.have.length(Math.ceil(240 / MAX_PARTITIONS_PER_INSERT));
    for (const insert of inserts) expect(monthsOf(insert).size).to.be.at.most(MAX_PARTITIONS_PER_INSERT);
    expect(inserts.flat().map((e) => e.event.id).sort()).to.deep.equal(events.map((e) => e.event.id).sort());
    const [first] = inserts;
    expect(first!.filter((e) => e.storedAt.startsWith('2006-01'))).to.have.length(2);
  });

  it('tells the engine a limit above the one it splits by, so a server profile cannot lower it under the consumer', () => {
    expect(INSERT_SETTINGS.max_partitions_per_insert_block).to.equal(String(ENGINE_MAX_PARTITIONS_PER_INSERT));
    expect(MAX_PARTITIONS_PER_INSERT).to.be.at.most(ENGINE_MAX_PARTITIONS_PER_INSERT);
  });
});
