import { expect } from 'chai';
import { openStore } from '../../../src/runtime/store-runtime.js';
import { DEVICE_EVENTS_TABLE } from '../../../src/store/device-events.js';
import { migrate } from '../../../src/store/migrations.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { uuid } from '../../support/factories.js';
import { tableSetting } from '../../support/table-setting.js';
import { waitFor } from '../../support/wait-for.js';
import { describeOnEachStore } from './gateways.js';

/** A month no other test writes: its partition holds only what this file writes, and goes with it. */
const MONTH = '198807';
/** Rows of about 2 KB each: some 20 MB, twice the size from which the engine's default writes a part wide (`min_bytes_for_wide_part`, 10 MiB). */
const ROWS = 10_000;

describeOnEachStore('store: the device table writes compact parts, however large', (gateway) => {
  let sql: SqlTransport;

  before(async () => {
    sql = await openStore((await gateway()).config);
  });

  after(async () => {
    for (const table of ['events', DEVICE_EVENTS_TABLE]) await sql.command(`ALTER TABLE ${table} DROP PARTITION ${MONTH}`);
    await sql.close();
  });

  const setting = (name: string) => tableSetting(sql, DEVICE_EVENTS_TABLE, name);

  /** The format of each active part of `table` in this file's month, with its rows. */
  const partsOf = (table: string) =>
    sql.query<{ part_type: string; rows: number | string }>(
      'SELECT part_type, rows FROM system.parts WHERE database = currentDatabase() AND table = {table:String} AND partition = {month:String} AND active',
      { table, month: MONTH },
    );

  it('writes one large insert as a wide part of the events table and a compact part of the device table', async () => {
    const org = uuid();
    const project = uuid();
    const device = uuid();
    // One insert, one part in each table (the device table's by its view). The payloads are
    // random, so the parts are as large on disk as their rows.
    await sql.command(
      `INSERT INTO events (org_id, project_id, occurred_at, id, domain, entity, action, device_id, payload, source_service)
       SELECT toUUID({org:String}), toUUID({project:String}), toDateTime64('1988-07-01 00:00:00', 6, 'UTC') + toIntervalSecond(number), generateUUIDv4(number),
         'telemetry', 'reading', 'recorded', toUUID({device:String}), concat('"', base64Encode(randomString(1500)), '"'), 'compact-parts-test'
       FROM numbers(${ROWS})`,
      { org, project, device },
    );
    const whole = (table: string) => async () => {
      const parts = await partsOf(table);
      return parts.length === 1 && Number(parts[0]!.rows) === ROWS ? parts[0]!.part_type : undefined;
    };
    // The events table keeps the engine's default: its part says that this size is one the engine writes wide.
    expect(await waitFor('the events part', whole('events'), 30_000, 100)).to.equal('Wide');
    expect(await waitFor('the device table part', whole(DEVICE_EVENTS_TABLE), 30_000, 100)).to.equal('Compact');
  });

  it('gives the device table back its compact parts when migrations run again, as they do at every start', async () => {
    const compact = await setting('min_bytes_for_wide_part');
    expect(Number(compact)).to.be.greaterThan(2 ** 40);
    await sql.command(`ALTER TABLE ${DEVICE_EVENTS_TABLE} RESET SETTING min_bytes_for_wide_part, min_rows_for_wide_part`);
    expect(await setting('min_bytes_for_wide_part')).to.equal(undefined);
    await migrate(sql);
    expect(await setting('min_bytes_for_wide_part')).to.equal(compact);
    expect(await setting('min_rows_for_wide_part')).to.equal(compact);
  });
});
