/**
 * What the device table costs to write and what it saves a device's page
 * (docs/decisions/device-pages.md): the product (events_by_device, filled by its view),
 * the by_device projection it replaced, and neither. Each variant gets a chDB store of its
 * own, COUNT events of one project (1,000 devices) over MONTHS months, written as
 * pre-encoded JSONEachRow in batches of 50,000; then the bytes on disk per event (every
 * table), and a device's first page and the project's first page read ROUNDS times each
 * with the SQL each variant's feed would send (the product's: the window its span sizes).
 * Writes the figures as a result file (bench/results/), each against `neither` in the
 * same run, and prints its path; `npm run bench:table` puts them in BENCHMARKS.md.
 *   node --import tsx bench/support/device-table-cost.ts [COUNT] [ROUNDS] [MONTHS]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { drainPending, Session } from 'chdb';
import { DEVICE_EVENTS_TABLE, DEVICE_SPANS_TABLE } from '../../src/store/device-events.js';
import { deviceWindowSql } from '../../src/store/device-pages.js';
import { feedSql } from '../../src/store/feed-sql.js';
import { storableEvent } from '../../src/store/event-rows.js';
import { eventRowText } from '../../src/store/event-row-text.js';
import { migrationStatements } from '../../src/store/migrations.js';
import { INSERT_SETTINGS, jsonEachRowBody } from '../../src/store/sql-transport.js';
import { telemetry } from './bench-events.js';
import { machineLoad, record, type Row } from './results.js';

const [count = '1000000', rounds = '200', months = '24'] = process.argv.slice(2);
const PROJECTION = "ALTER TABLE events ADD PROJECTION by_device (SELECT * ORDER BY (org_id, project_id, device_id, occurred_at, id))";
const PROJECTION_MODE = "ALTER TABLE events MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild'";

/** What the variants without the device table drop: its view and the view of its spans. */
const WITHOUT_DEVICE_TABLE = [`DROP VIEW ${DEVICE_EVENTS_TABLE}_view`, `DROP VIEW ${DEVICE_SPANS_TABLE}_view`];

interface Variant {
  /** Statements after the product's migrations. */
  readonly after: readonly string[];
  /** Where a device's page is read: the device table, or the events table (through the projection, or none). */
  readonly devicePagesFrom: string;
}

const VARIANTS: Record<string, Variant> = {
  'device table (the product)': { after: [], devicePagesFrom: DEVICE_EVENTS_TABLE },
  'by_device projection (before)': { after: [...WITHOUT_DEVICE_TABLE, PROJECTION_MODE, PROJECTION], devicePagesFrom: 'events' },
  neither: { after: WITHOUT_DEVICE_TABLE, devicePagesFrom: 'events' },
};

const orgId = randomUUID();
const projectId = randomUUID();
const spanMs = Number(months) * 30 * 86_400_000;
const start = Date.now() - spanMs;
const events = telemetry(Number(count), orgId, projectId).map((e, i) => ({ ...e, occurred_at: new Date(start + Math.floor((i * spanMs) / Number(count))).toISOString() }));
const started = new Date().toISOString();
const load = machineLoad();
const bodies: Buffer[] = [];
for (let i = 0; i < events.length; i += 50_000) bodies.push(jsonEachRowBody(events.slice(i, i + 50_000).map((e) => eventRowText(storableEvent(e)))));
const deviceId = events[events.length - 1]!.device_id!;

interface Figures {
  readonly insertRowsPerSecond: number;
  readonly bytesOnDiskPerEvent: number;
  readonly device: { readonly meanMs: number; readonly rowsRead: number };
  readonly project: { readonly meanMs: number; readonly rowsRead: number };
}
const figures = new Map<string, Figures>();

for (const [name, variant] of Object.entries(VARIANTS)) {
  const dir = mkdtempSync(join(tmpdir(), 'core-gateway-device-table-'));
  const session = new Session(dir);
  try {
    for (const statement of [...migrationStatements({ kind: 'single' }), ...variant.after]) session.query(statement);
    const started = process.hrtime.bigint();
    for (const body of bodies) await session.insert({ table: 'events', values: body, format: 'JSONEachRow', settings: INSERT_SETTINGS });
    const insertSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    const bytes = Number(
      session.query(`SELECT sum(bytes_on_disk) FROM system.parts WHERE database = currentDatabase() AND active AND table IN ('events', '${DEVICE_EVENTS_TABLE}', '${DEVICE_SPANS_TABLE}')`, 'TSV').toString().trim(),
    );
    const page = async (deviceFilter: boolean) => {
      const query = { orgId, projectId, filters: deviceFilter ? { deviceId } : {}, after: undefined, limit: 51 };
      // The product reads a device's page in the window its span sizes; the others as the feed read it before.
      const { sql: text, params } = deviceFilter && variant.devicePagesFrom === DEVICE_EVENTS_TABLE ? deviceWindowSql(query) : feedSql(query);
      const from = deviceFilter ? text.replace(`FROM ${DEVICE_EVENTS_TABLE}`, `FROM ${variant.devicePagesFrom}`) : text;
      let ms = 0;
      let rowsRead = 0;
      for (let i = 0; i < Number(rounds); i++) {
        const t0 = process.hrtime.bigint();
        const result = JSON.parse((await session.queryBindAsync(from, params, { format: 'JSON' })).text()) as { statistics: { rows_read: number } };
        ms += Number(process.hrtime.bigint() - t0) / 1e6;
        rowsRead = result.statistics.rows_read;
      }
      return { meanMs: Number((ms / Number(rounds)).toFixed(2)), rowsRead };
    };
    const device = await page(true);
    const project = await page(false);
    figures.set(name, { insertRowsPerSecond: Math.round(Number(count) / insertSeconds), bytesOnDiskPerEvent: Number((bytes / Number(count)).toFixed(1)), device, project });
  } finally {
    session.close();
    // The engine binds one data directory per process: the next variant's opens once this one has let go.
    await drainPending();
    rmSync(dir, { recursive: true, force: true });
  }
}

const scenario = 'device table cost';
const base = figures.get('neither')!;
const rows: Row[] = [...figures].flatMap(([name, f]) => {
  const against = (value: number) => (name === 'neither' ? {} : { baseline: { name: 'neither', value } });
  return [
    { scenario, measure: `insert into chDB, ${name}`, value: f.insertRowsPerSecond, unit: 'rows/s', ...against(base.insertRowsPerSecond) },
    { scenario, measure: `bytes on disk per event, ${name}`, value: f.bytesOnDiskPerEvent, unit: 'bytes', ...against(base.bytesOnDiskPerEvent) },
    { scenario, measure: `a device's first page, ${name}`, value: f.device.meanMs, unit: 'ms', note: `${f.device.rowsRead.toLocaleString('en-US')} rows read`, ...against(base.device.meanMs) },
    { scenario, measure: `a project's first page, ${name}`, value: f.project.meanMs, unit: 'ms', note: `${f.project.rowsRead.toLocaleString('en-US')} rows read`, ...against(base.project.meanMs) },
  ];
});
console.log(record(rows, { events: Number(count), rounds: Number(rounds), months: Number(months) }, { started, load, scenarios: [scenario] }));
