/**
 * What the feed's set skip indexes (project_idx, domain_idx, entity_idx, action_idx) and
 * its spans (docs/decisions/feed-event-spans.md: a batch's span rows written before
 * it, and the view event_spans_view) cost ingestion: the same pre-encoded JSONEachRow
 * batches of 50,000 events over 1,000 projects inserted into a chDB store with the
 * product's tables, without the spans (no span rows, no view), with project_idx alone of
 * the four indexes, and with none of them, the variants taking turns for ROUNDS rounds so
 * that the machine's drift falls on each. Prints one JSON line per round and variant, then
 * each variant's total insert time over the one without the four indexes, the product's
 * over the one without spans, and the microseconds an event spanRows took to build them.
 *   node --import tsx bench/support/skip-index-cost.ts [COUNT] [ROUNDS]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { drainPending, Session } from 'chdb';
import { storableEvent } from '../../src/store/event-rows.js';
import { eventRowText } from '../../src/store/event-row-text.js';
import { spanRows } from '../../src/store/event-spans.js';
import { migrationStatements } from '../../src/store/migrations.js';
import { INSERT_SETTINGS, jsonEachRowBody } from '../../src/store/sql-transport.js';
import { telemetry } from './bench-events.js';

const [count = '1000000', rounds = '3'] = process.argv.slice(2);
const FEED_INDEXES = ['project_idx', 'domain_idx', 'entity_idx', 'action_idx'];
/** What keeps the spans: the view, and the rows the store writes before each batch. */
const SPANS = 'event_spans_view';
/** Each variant by what it leaves out of the product's tables: feed indexes, the spans. */
const VARIANTS: Record<string, readonly string[]> = {
  'the product table': [],
  'without spans': [SPANS],
  'project_idx only': FEED_INDEXES.slice(1),
  'none of the four': FEED_INDEXES,
};
const PROJECTS = Array.from({ length: 1000 }, () => randomUUID());
const ORGS = Array.from({ length: 100 }, () => randomUUID());

const events = telemetry(Number(count), ORGS[0]!, PROJECTS[0]!).map((e, i) => ({ ...e, org_id: ORGS[i % 100]!, project_id: PROJECTS[i % 1000]! }));
const bodies: Buffer[] = [];
const spanBodies: Buffer[] = [];
let spanMicros = 0;
for (let i = 0; i < events.length; i += 50_000) {
  const batch = events.slice(i, i + 50_000).map((e) => storableEvent(e));
  bodies.push(jsonEachRowBody(batch.map(eventRowText)));
  const started = process.hrtime.bigint();
  spanBodies.push(jsonEachRowBody(spanRows(batch)));
  spanMicros += Number(process.hrtime.bigint() - started) / 1e3;
}

async function insertSeconds(leftOut: readonly string[]): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'core-gateway-skip-index-'));
  const session = new Session(dir);
  try {
    for (const statement of migrationStatements({ kind: 'single' })) {
      if (!leftOut.some((name) => statement.includes(` ${name} `))) session.query(statement);
    }
    const spans = !leftOut.includes(SPANS);
    const started = process.hrtime.bigint();
    for (const [k, body] of bodies.entries()) {
      // As the store writes a batch: its spans, then its events.
      if (spans) await session.insert({ table: 'event_spans', values: spanBodies[k]!, format: 'JSONEachRow', settings: INSERT_SETTINGS });
      await session.insert({ table: 'events', values: body, format: 'JSONEachRow', settings: INSERT_SETTINGS });
    }
    return Number(process.hrtime.bigint() - started) / 1e9;
  } finally {
    session.close();
    // The engine binds one data directory per process: the next variant's opens once this one has let go.
    await drainPending();
    rmSync(dir, { recursive: true, force: true });
  }
}

const names = Object.keys(VARIANTS);
const totals = new Map(names.map((name) => [name, 0]));
for (let round = 0; round < Number(rounds); round++) {
  // Rotate which goes first, so none always runs on a warmer (or busier) machine.
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + round) % names.length]!;
    const seconds = await insertSeconds(VARIANTS[name]!);
    totals.set(name, totals.get(name)! + seconds);
    console.log(JSON.stringify({ round, variant: name, events: Number(count), rowsPerSecond: Math.round(Number(count) / seconds) }));
  }
}
const base = totals.get('none of the four')!;
console.log(JSON.stringify(Object.fromEntries(names.map((name) => [`${name}: insert time over none`, Number((totals.get(name)! / base).toFixed(3))]))));
const product = totals.get('the product table')! / totals.get('without spans')!;
console.log(
  JSON.stringify({
    'the product table: insert time over without spans': Number(product.toFixed(3)),
    'span rows built, µs an event': Number((spanMicros / events.length).toFixed(3)),
    'span rows a batch of 50,000': Math.round(spanBodies.reduce((n, b) => n + b.toString().split('\n').length - 1, 0) / spanBodies.length),
  }),
);
