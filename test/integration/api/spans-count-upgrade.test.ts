import { expect } from 'chai';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import { eventRowText } from '../../../src/store/event-row-text.js';
import { EVENT_SPANS_COUNT } from '../../../src/store/event-spans.js';
import { backfills, migrate, migrationStatements } from '../../../src/store/migrations.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { recordingTransport } from '../../support/recording-transport.js';
import { serverDatabaseOfItsOwn } from './gateways.js';

/** The statements of the version before the spans' count: its spans table and view without it, its backfills done. */
function earlierVersion(): string[] {
  // The device spans have a count of their own, of the same name: only the event spans change.
  return migrationStatements({ kind: 'single' })
    .filter((s) => !s.includes(`ADD COLUMN IF NOT EXISTS ${EVENT_SPANS_COUNT}`))
    .map((s) => (s.startsWith('CREATE TABLE IF NOT EXISTS event_spans (') ? s.replace(`,\n    ${EVENT_SPANS_COUNT}`, '') : s))
    .map((s) => (s.startsWith('CREATE MATERIALIZED VIEW IF NOT EXISTS event_spans_view') ? s.replace(', count() AS events', '') : s));
}

describe('store: spans written by an earlier version gain their count of events at start [clickhouse-server]', function () {
  this.timeout(120_000);
  const opened = serverDatabaseOfItsOwn('spans_upgrade');

  it('counts the events written before and after, and a first page then takes one query', async () => {
    const sql = opened();
    for (const statement of earlierVersion()) await sql.command(statement);
    for (const { name } of backfills({ kind: 'single' }).filter((b) => b.name === b.table)) {
      await sql.command('INSERT INTO store_backfills (name) VALUES ({name:String})', { name });
    }
    const [before] = await sql.query<{ query: string }>("SELECT create_table_query AS query FROM system.tables WHERE database = currentDatabase() AND name = 'event_spans_view'");
    expect(before!.query, 'the earlier view').to.not.include('count() AS events');
    const base = { org_id: uuid(), project_id: uuid() };
    const event = (n: number) => storableEvent(canonicalEvent({ ...base, occurred_at: new Date(Date.UTC(2026, 0, 1, 0, n)).toISOString() }));
    // Written as that version wrote, so its spans carry no count.
    await sql.insert('events', Array.from({ length: 30 }, (_, n) => eventRowText(event(n))));

    await migrate(sql, { kind: 'single' }, { settleMs: 0 });
    const [after] = await sql.query<{ query: string }>("SELECT create_table_query AS query FROM system.tables WHERE database = currentDatabase() AND name = 'event_spans_view'");
    expect(after!.query).to.include('count() AS events');
    const counted = async () => Number((await sql.query<{ n: string }>('SELECT sum(events) AS n FROM event_spans WHERE project_id = {p:UUID}', { p: base.project_id }))[0]!.n);
    expect(await counted(), 'the backfill counted what was written before').to.equal(30);
    await createClickHouseEventStore(sql).insertEvents(Array.from({ length: 20 }, (_, n) => event(30 + n)));
    expect(await counted(), 'the view counts what is written after').to.equal(50);
    await migrate(sql, { kind: 'single' }, { settleMs: 0 });
    expect(await counted(), 'a start after that counts nothing again').to.equal(50);

    const recording = recordingTransport(sql);
    const store = createClickHouseEventStore(recording, { now: () => Date.UTC(2026, 0, 2), batching: false });
    const page = await store.listEvents({ orgId: base.org_id, projectId: base.project_id, filters: {}, after: undefined, limit: 11 });
    expect(page.events).to.have.length(11);
    expect(recording.sent, 'one query: the first read sized by the count').to.have.length(1);
  });
});
