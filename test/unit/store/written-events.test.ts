import { expect } from 'chai';
import { createClickHouseProjectChanges } from '../../../src/store/clickhouse-project-changes.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { toEventRow } from '../../../src/store/event-rows.js';
import { canonicalEvent } from '../../support/factories.js';

/** A transport that answers every query with `rows`, as the store would read them back. */
const answering = (rows: Record<string, unknown>[]) => ({ async query<Row>() { return rows as Row[]; } }) as unknown as SqlTransport;

/** A row of the events table as JSONEachRow reads it back, its payload the text given. */
const row = (payload: string | null) => ({ ...toEventRow(canonicalEvent({ occurred_at: '2026-11-26T10:00:00.123456Z' }), '2026-11-26 10:00:00.123456'), payload });

describe("the rows of a window of the store's writes", () => {
  const window = ['2026-11-26 10:00:00.000', '2026-11-26 10:00:01.000'] as const;

  it('reads each row back as the feed serves it, at its place in the feed', async () => {
    const stored = row('{"temperature":21.5}');
    const [event] = (await createClickHouseProjectChanges(answering([stored])).writtenEvents(...window, 10))!;
    expect(event!.position).to.deep.equal({ occurredAt: stored.occurred_at, id: stored.id });
    expect(event!.event).to.include({ id: stored.id, occurred_at: '2026-11-26T10:00:00.123456Z' });
    expect(event!.event.payload).to.deep.equal({ temperature: 21.5 });
  });

  it('answers undefined, for the projects to be named instead, past the limit or for a row it cannot read', async () => {
    expect(await createClickHouseProjectChanges(answering([row(null), row(null)])).writtenEvents(...window, 1)).to.equal(undefined);
    expect(await createClickHouseProjectChanges(answering([row('{}'), row('not json')])).writtenEvents(...window, 10)).to.equal(undefined);
  });
});
