/**
 * What the by_device projection costs to write and what it saves the device_id filter,
 * for the projection the table has (every column, `SELECT *`), one of the sort key's
 * row offsets only (`SELECT _part_offset`, ClickHouse 25.x and later), and none. Each
 * variant gets a chDB store of its own, COUNT events of one project (1,000 devices)
 * written as pre-encoded JSONEachRow in batches of 50,000; then the feed's own SQL for a
 * device's first page and for the project's first page, ROUNDS times each. Prints one
 * JSON line per variant.
 *   node --import tsx bench/support/projection-cost.ts [COUNT] [ROUNDS]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { drainPending, Session } from 'chdb';
import { feedSql } from '../../src/store/feed-sql.js';
import { storableEvent } from '../../src/store/event-rows.js';
import { eventRowText } from '../../src/store/event-row-text.js';
import { migrationStatements } from '../../src/store/migrations.js';
import { INSERT_SETTINGS, jsonEachRowBody } from '../../src/store/sql-transport.js';
import { telemetry } from './bench-events.js';

const [count = '1000000', rounds = '200'] = process.argv.slice(2);
const PRODUCT = 'by_device (SELECT * ORDER BY (org_id, project_id, device_id, occurred_at, id))';
const VARIANTS: Record<string, string | undefined> = {
  'every column (SELECT *)': PRODUCT,
  'row offsets only (SELECT _part_offset)': 'by_device (SELECT _part_offset ORDER BY (org_id, project_id, device_id, occurred_at, id))',
  'no projection': undefined,
};

const orgId = randomUUID();
const projectId = randomUUID();
const events = telemetry(Number(count), orgId, projectId);
const bodies: Buffer[] = [];
for (let i = 0; i < events.length; i += 50_000) bodies.push(jsonEachRowBody(events.slice(i, i + 50_000).map((e) => eventRowText(storableEvent(e)))));
const deviceId = events[events.length - 1]!.device_id!;

for (const [name, projection] of Object.entries(VARIANTS)) {
  const dir = mkdtempSync(join(tmpdir(), 'core-gateway-projection-'));
  const session = new Session(dir);
  try {
    for (const statement of migrationStatements({ kind: 'single' })) {
      if (!statement.includes(PRODUCT)) session.query(statement);
      else if (projection !== undefined) session.query(statement.replace(PRODUCT, projection));
    }
    const started = process.hrtime.bigint();
    for (const body of bodies) await session.insert({ table: 'events', values: body, format: 'JSONEachRow', settings: INSERT_SETTINGS });
    const insertSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    const page = async (deviceFilter: boolean) => {
      const { sql, params } = feedSql({ orgId, projectId, filters: deviceFilter ? { deviceId } : {}, after: undefined, limit: 51 });
      // chDB's rowsRead counts the rows a query returns, not those it read: time is what tells the variants apart.
      let ms = 0;
      for (let i = 0; i < Number(rounds); i++) {
        const t0 = process.hrtime.bigint();
        await session.queryBindAsync(sql, params, { format: 'JSONEachRow' });
        ms += Number(process.hrtime.bigint() - t0) / 1e6;
      }
      return { meanMs: Number((ms / Number(rounds)).toFixed(2)) };
    };
    const device = await page(true);
    const project = await page(false);
    console.log(JSON.stringify({ variant: name, events: Number(count), insertRowsPerSecond: Math.round(Number(count) / insertSeconds), devicePage: device, projectPage: project }));
  } finally {
    session.close();
    // The engine binds one data directory per process: the next variant's opens once this one has let go.
    await drainPending();
    rmSync(dir, { recursive: true, force: true });
  }
}
