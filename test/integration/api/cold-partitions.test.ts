import { expect } from 'chai';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import { eventRowText } from '../../../src/store/event-row-text.js';
import { COLD_PARTITION_AGE_SECONDS, migrate } from '../../../src/store/migrations.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { tableSetting } from '../../support/table-setting.js';
import { waitFor } from '../../support/wait-for.js';
import { describeOnEachStore } from './gateways.js';

/** The tables partitioned by month, which pages read month by month. */
const MONTHLY = ['events', 'events_by_device'];

/** A table shaped as `events`, settings included, holding only what this file writes. */
const TABLE = `events_cold_${uuid().replaceAll('-', '')}`;

describeOnEachStore('store: a past month is merged into one part', (gateway) => {
  let sql: SqlTransport;

  before(async () => {
    sql = await openStore((await gateway()).config);
  });

  after(async () => {
    await sql.command(`DROP TABLE IF EXISTS ${TABLE}`);
    await sql.close();
  });

  const setting = (table: string, name: string) => tableSetting(sql, table, name);

  it('sets both month-partitioned tables to merge a month once all its parts are a day old', async () => {
    for (const table of MONTHLY) {
      expect(await setting(table, 'min_age_to_force_merge_seconds'), table).to.equal(String(COLD_PARTITION_AGE_SECONDS));
      expect(await setting(table, 'min_age_to_force_merge_on_partition_only'), table).to.equal('1');
    }
  });

  it('gives the setting back to a table that lost it when migrations run again, as they do at every start', async () => {
    await sql.command('ALTER TABLE events_by_device RESET SETTING min_age_to_force_merge_seconds');
    expect(await setting('events_by_device', 'min_age_to_force_merge_seconds')).to.equal(undefined);
    await migrate(sql);
    expect(await setting('events_by_device', 'min_age_to_force_merge_seconds')).to.equal(String(COLD_PARTITION_AGE_SECONDS));
  });

  it('leaves a past month written in three inserts as one part, with a copy written twice folded, once its parts are old enough', async () => {
    // The events table's own settings, but an age of a second: a day is too long to wait for.
    await sql.command(`CREATE TABLE ${TABLE} AS events`);
    await sql.command(`ALTER TABLE ${TABLE} MODIFY SETTING min_age_to_force_merge_seconds = 1`);
    const org = uuid();
    const project = uuid();
    const at = (day: number) => new Date(Date.UTC(2004, 4, day, 12)).toISOString();
    const batches = [1, 2, 3].map((b) => Array.from({ length: 5 }, (_, k) => storableEvent(canonicalEvent({ org_id: org, project_id: project, occurred_at: at(b * 5 + k) }))));
    // The first event again, in the last insert: a redelivered copy.
    const copy = batches[0]![0]!;
    for (const [b, batch] of batches.entries()) await sql.insert(TABLE, [...batch, ...(b === 2 ? [copy] : [])].map(eventRowText));
    const parts = async () => {
      const [row] = await sql.query<{ parts: number | string }>(`SELECT count() AS parts FROM system.parts WHERE database = currentDatabase() AND table = {table:String} AND active`, { table: TABLE });
      return Number(row?.parts);
    };
    // Each insert is a part of its own until the month is old enough to merge.
    await waitFor('the month merged into one part', async () => ((await parts()) === 1 ? true : undefined), 60_000, 200);
    const [row] = await sql.query<{ rows: number | string }>(`SELECT count() AS rows FROM ${TABLE}`);
    expect(Number(row?.rows)).to.equal(15);
  });
});
