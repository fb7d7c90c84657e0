import { expect } from 'chai';
import { createErasureStore } from '../../../src/store/clickhouse-erasure.js';
import { createClickHouseEventStore } from '../../../src/store/clickhouse-event-store.js';
import { DEVICE_SPANS_GRANULE, DEVICE_SPANS_TABLE, EARLIER_DEVICE_SPANS_TABLE } from '../../../src/store/device-events.js';
import { eventRowText } from '../../../src/store/event-row-text.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import { backfills, migrate, migrationStatements } from '../../../src/store/migrations.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { recordingTransport } from '../../support/recording-transport.js';
import { serverDatabaseOfItsOwn } from './gateways.js';

/** This version's statements as the version before the second spans table wrote them: the device spans under their first name, in granules of 8,192 rows. */
const asEarlier = (statement: string) => statement.replaceAll(DEVICE_SPANS_TABLE, EARLIER_DEVICE_SPANS_TABLE).replace(`\n  SETTINGS index_granularity = ${DEVICE_SPANS_GRANULE}`, '');

describe('store: device spans of an earlier version, in large granules, are copied into the second table at start and kept for that version [clickhouse-server]', function () {
  this.timeout(120_000);
  const opened = serverDatabaseOfItsOwn('device_spans_upgrade');

  const spanOf = async (table: string, deviceId: string) => {
    const [row] = await opened().query<{ events: string; oldest: string | null }>(`SELECT sum(events) AS events, min(oldest) AS oldest FROM ${table} WHERE device_id = {d:UUID}`, { d: deviceId });
    return { events: Number(row!.events), oldest: row!.oldest };
  };
  const granularity = async (table: string) => {
    const [row] = await opened().query<{ engine_full: string }>('SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = {t:String}', { t: table });
    return /index_granularity = (\d+)/.exec(row?.engine_full ?? '')?.[1];
  };

  it('fills the second table with what was written before, both tables with what is written after, reads only the second, and erases from both', async () => {
    const sql = opened();
    for (const statement of migrationStatements({ kind: 'single' })) await sql.command(asEarlier(statement));
    for (const { name } of backfills({ kind: 'single' })) await sql.command('INSERT INTO store_backfills (name) VALUES ({name:String})', { name: asEarlier(name) });
    expect(await granularity(EARLIER_DEVICE_SPANS_TABLE), 'the earlier spans').to.equal('8192');
    const base = { org_id: uuid(), project_id: uuid(), device_id: uuid() };
    const events = Array.from({ length: 50 }, (_, n) => storableEvent(canonicalEvent({ ...base, occurred_at: new Date(Date.UTC(2026, 0, 1, 0, n)).toISOString() })));
    // Written as that version wrote: its view fills its spans.
    await sql.insert('events', events.slice(0, 30).map(eventRowText));

    await migrate(sql, { kind: 'single' }, { settleMs: 0 });
    expect(await granularity(DEVICE_SPANS_TABLE), 'the second spans').to.equal(String(DEVICE_SPANS_GRANULE));
    expect(await spanOf(DEVICE_SPANS_TABLE, base.device_id), 'the backfill copied what was written before').to.deep.equal({ events: 30, oldest: '2026-01-01 00:00:00.000000' });
    await createClickHouseEventStore(sql).insertEvents(events.slice(30));
    // A process of the earlier version still reads its table during a rolling upgrade.
    expect(await spanOf(EARLIER_DEVICE_SPANS_TABLE, base.device_id), 'the earlier view still writes').to.deep.include({ events: 50 });
    expect(await spanOf(DEVICE_SPANS_TABLE, base.device_id), 'the new view writes').to.deep.include({ events: 50 });
    await migrate(sql, { kind: 'single' }, { settleMs: 0 });
    expect((await spanOf(DEVICE_SPANS_TABLE, base.device_id)).events, 'a start after that copies nothing again').to.equal(50);

    const recording = recordingTransport(sql);
    const store = createClickHouseEventStore(recording, { now: () => Date.UTC(2026, 0, 2), batching: false });
    const page = await store.listEvents({ orgId: base.org_id, projectId: base.project_id, filters: { deviceId: base.device_id }, after: undefined, limit: 11 });
    expect(page.events.map((e) => e.event.id)).to.deep.equal(events.slice(39).reverse().map((e) => e.event.id));
    expect(recording.sent.join('\n')).to.match(new RegExp(`FROM ${DEVICE_SPANS_TABLE}\\s`)).and.not.match(new RegExp(`FROM ${EARLIER_DEVICE_SPANS_TABLE}\\s`));

    const erasure = await createErasureStore({ transport: sql, layout: { kind: 'single' }, clickhouse: undefined });
    const scope = { orgId: base.org_id, projectId: base.project_id, deviceId: base.device_id };
    const tables = await erasure.tablesFor(scope);
    expect(tables).to.include.members([DEVICE_SPANS_TABLE, EARLIER_DEVICE_SPANS_TABLE]);
    for (const table of tables) await erasure.deleteFrom(table, scope);
    const left = await erasure.rowsLeft(scope);
    expect(left).to.deep.include({ [DEVICE_SPANS_TABLE]: 0, [EARLIER_DEVICE_SPANS_TABLE]: 0, events: 0 });
    // Dropped by an operator once no earlier process runs: the next erasure leaves it out.
    await sql.command(`DROP VIEW ${EARLIER_DEVICE_SPANS_TABLE}_view`);
    await sql.command(`DROP TABLE ${EARLIER_DEVICE_SPANS_TABLE}`);
    expect(await erasure.tablesFor(scope)).to.include(DEVICE_SPANS_TABLE).and.not.include(EARLIER_DEVICE_SPANS_TABLE);
    await erasure.close();
  });
});
