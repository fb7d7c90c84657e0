/**
 * The history the store-scale scenarios write before they read (feed-scale, dashboards,
 * retention): events over 1,000 projects in 100 organizations and 24 months, 100 devices
 * a project, written as ingestion writes them, and stored as a deployment's store holds
 * them once its past months have aged (docs/decisions/cold-partitions-merged.md).
 */
import { waitFor } from '../../test/support/wait-for.js';
import { DEVICE_EVENTS_TABLE } from '../../src/store/device-events.js';
import { COLD_PARTITION_AGE_SECONDS } from '../../src/store/migrations.js';
import { runSql } from './server-sql.js';

export const PROJECTS = 1000;
export const ORGS = 100;
export const DEVICES_PER_PROJECT = 100;
export const MONTHS = 24;

export const org = (p: number) => `00000000-0000-4000-a000-${String(p % ORGS).padStart(12, '0')}`;
export const project = (p: number) => `00000000-0000-4000-b000-${String(p).padStart(12, '0')}`;
export const device = (p: number, d: number) => `00000000-0000-4000-c${String(d).padStart(3, '0')}-${String(p).padStart(12, '0')}`;
export const fleet = (p: number, f: number) => `00000000-0000-4000-d${String(f).padStart(3, '0')}-${String(p).padStart(12, '0')}`;

/** What differs between the scenarios' histories. */
export interface HistoryShape {
  readonly fleetsPerProject: number;
  /** Projects 0 to `idleProjects` − 1 stop a year before the end; their events go to the next as many projects from then on. 0: no project idles. */
  readonly idleProjects: number;
}

/** The instants the history spans, in ms since the epoch: its first event at `startMs`, its `total`-th at `endMs`. */
export interface HistorySpan {
  readonly startMs: number;
  readonly endMs: number;
}

/** The MONTHS months up to `endMs`. */
export function historySpan(endMs: number): HistorySpan {
  const start = new Date(endMs);
  start.setUTCMonth(start.getUTCMonth() - MONTHS);
  return { startMs: start.getTime(), endMs };
}

/** The number of the history's first event at or after `ms`. */
export const eventAt = (ms: number, total: number, span: HistorySpan): number => Math.ceil(((ms - span.startMs) * total) / (span.endMs - span.startMs));

/**
 * Writes the events numbered `range.from` to `range.to` (exclusive) of a history of
 * `total`: in time order, `batch` events an insert, each insert a part (or two, at a
 * month's end). The n-th event is at start + n × span / total, so numbers past `total`
 * carry the history on past the span's end at its rate; its project, device, fleet and
 * domain are hashes of n.
 */
export async function writeEvents(url: string, database: string, shape: HistoryShape, range: { from: number; to: number }, total: number, batch: number, span: HistorySpan): Promise<void> {
  const stepUs = ((span.endMs - span.startMs) * 1000) / total;
  const idleFrom = Math.floor(total * (1 - 12 / MONTHS));
  const start = new Date(span.startMs).toISOString().replace('T', ' ').replace('Z', '');
  const uuidOf = (prefix: string, inner: string) => `toUUID(concat('00000000-0000-4000-${prefix}', leftPad(toString(${inner}), 3, '0'), '-', leftPad(toString(p), 12, '0')))`;
  const idle = shape.idleProjects;
  const projectOf = idle === 0 ? `cityHash64(number) % ${PROJECTS}` : `if(number >= ${idleFrom} AND cityHash64(number) % ${PROJECTS} < ${idle}, cityHash64(number) % ${PROJECTS} + ${idle}, cityHash64(number) % ${PROJECTS})`;
  for (let from = range.from; from < range.to; from += batch) {
    const count = Math.min(batch, range.to - from);
    const sql = `INSERT INTO events (org_id, project_id, occurred_at, id, domain, entity, action, device_id, fleet_id, payload, source_service)
      SELECT
        toUUID(concat('00000000-0000-4000-a000-', leftPad(toString(p % ${ORGS}), 12, '0'))),
        toUUID(concat('00000000-0000-4000-b000-', leftPad(toString(p), 12, '0'))),
        addMicroseconds(toDateTime64('${start}', 6, 'UTC'), toUInt64(number * ${stepUs})),
        generateUUIDv4(number),
        ['telemetry', 'devices', 'edge', 'ota'][cityHash64(number, 1) % 4 + 1],
        'reading', 'recorded',
        ${uuidOf('c', `cityHash64(number, 2) % ${DEVICES_PER_PROJECT}`)},
        ${uuidOf('d', `cityHash64(number, 3) % ${shape.fleetsPerProject}`)},
        concat('{"seq":', toString(number), ',"temperature":', toString(20 + number % 10), '}'), 'bench'
      FROM (SELECT number, ${projectOf} AS p FROM numbers(${from}, ${count}))`;
    await runSql(url, database, sql);
    if (((from - range.from) / batch) % 200 === 199) console.error(`  history: ${(from + count).toLocaleString('en-US')} of ${total.toLocaleString('en-US')} events written`);
  }
}

/** The tables partitioned by month, whose past months merge into one part. */
const MONTHLY_TABLES = ['events', DEVICE_EVENTS_TABLE];

/**
 * `total` events over `span`, as a deployment's store holds them: the months before the
 * current one written first and left as one part each, as the tables' own merging of a
 * month whose parts are a day old leaves them, here with an age of a second in place of
 * the day that a deployment's past months have long passed; then the current month
 * written at the production setting, left as its background merges leave it.
 */
export async function writeAgedHistory(url: string, database: string, shape: HistoryShape, total: number, batch: number, span: HistorySpan): Promise<void> {
  const monthStart = new Date(span.endMs);
  const current = eventAt(Date.UTC(monthStart.getUTCFullYear(), monthStart.getUTCMonth(), 1), total, span);
  const age = (seconds: number) => Promise.all(MONTHLY_TABLES.map((table) => runSql(url, database, `ALTER TABLE ${table} MODIFY SETTING min_age_to_force_merge_seconds = ${seconds}`)));
  await writeEvents(url, database, shape, { from: 0, to: current }, total, batch, span);
  await age(1);
  await waitFor(
    'each past month merged into one part',
    async () => {
      const most = Number((await runSql(url, database, `SELECT max(parts) FROM (SELECT count() AS parts FROM system.parts WHERE database = currentDatabase() AND active AND table IN (${MONTHLY_TABLES.map((t) => `'${t}'`).join(', ')}) GROUP BY table, partition)`)).trim());
      return most === 1 ? true : undefined;
    },
    2 * 3600_000,
    2000,
  );
  await age(COLD_PARTITION_AGE_SECONDS);
  await writeEvents(url, database, shape, { from: current, to: total }, total, batch, span);
}
