/**
 * The benchmark suite (never part of npm test): every figure beside a baseline measured
 * in the same run, load from autocannon in a process of its own, every server a process
 * of its own. Prints its tables and writes bench/results/<time>.json, to be committed;
 * `npm run bench:table` then puts the newest file of each scenario into BENCHMARKS.md.
 *   npm run bench
 *   BENCH_SCENARIOS=commands,feed BENCH_SECONDS=5 npm run bench
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { startInfra } from '../test/support/infra.js';
import { repoRoot } from '../test/support/processes.js';
import { measureBacklog } from './scenarios/backlog.js';
import { measureCeiling } from './scenarios/ceiling.js';
import { measureCommands } from './scenarios/commands.js';
import { measureDashboards } from './scenarios/dashboards.js';
import { measureEmbedded } from './scenarios/embedded.js';
import { measureFeed } from './scenarios/feed.js';
import { measureFeedAtScale } from './scenarios/feed-scale.js';
import { measureIngest } from './scenarios/ingest.js';
import { measureMemory } from './scenarios/memory.js';
import { measureRetention } from './scenarios/retention.js';
import { measureTail } from './scenarios/tail.js';
import { newSecret, type BenchContext } from './support/context.js';
import { parseResultFile, resultsTables } from './support/results-document.js';
import { machineLoad, record, type Row } from './support/results.js';

const DEFAULT_SCENARIOS = ['commands', 'ingest', 'feed', 'embedded', 'memory', 'tail'];
/** Scenarios run only when named: feed-scale writes 100M events and waits for their merges (30 minutes with its measurements on this machine, 2026-11-27). */
const NAMED_SCENARIOS = ['feed-scale', 'dashboards', 'backlog', 'retention'];
const env = process.env;
const number = (name: string, fallback: number) => Number(env[name] ?? fallback);

const settings = {
  BENCH_SECONDS: number('BENCH_SECONDS', 10),
  BENCH_INGEST_EVENTS: number('BENCH_INGEST_EVENTS', 1_000_000),
  BENCH_INGEST_SWEEP_EVENTS: number('BENCH_INGEST_SWEEP_EVENTS', 300_000),
  BENCH_FRESHNESS_SECONDS: number('BENCH_FRESHNESS_SECONDS', 20),
  BENCH_FEED_SIZES: env['BENCH_FEED_SIZES'] ?? '1000000,10000000',
  BENCH_FEED_SCALE_SIZES: env['BENCH_FEED_SCALE_SIZES'] ?? '1000000,100000000',
  BENCH_EMBEDDED_EVENTS: number('BENCH_EMBEDDED_EVENTS', 100_000),
  BENCH_SOAK_SECONDS: number('BENCH_SOAK_SECONDS', 600),
  INGEST_BATCH_SIZE: number('INGEST_BATCH_SIZE', 50_000),
  BENCH_TAIL_COUNTS: env['BENCH_TAIL_COUNTS'] ?? '10,1000,10000',
  BENCH_TAIL_RATE: number('BENCH_TAIL_RATE', 200),
  /** BENCH_TAIL_FAIRNESS=0 runs only the tail counts, not the feed-beside-one-caller runs. */
  BENCH_TAIL_FAIRNESS: number('BENCH_TAIL_FAIRNESS', 1),
  /** Events in the store before the dashboards start; the size is 100000000. */
  BENCH_DASHBOARD_EVENTS: number('BENCH_DASHBOARD_EVENTS', 1_000_000),
  /** Dashboards of each kind (project, device), a run each. */
  BENCH_DASHBOARD_COUNTS: env['BENCH_DASHBOARD_COUNTS'] ?? '100,1000',
  BENCH_DASHBOARD_SECONDS: number('BENCH_DASHBOARD_SECONDS', 60),
  /** Kept first pages off, on, or both (off,on), a run each. */
  BENCH_DASHBOARD_KEPT: env['BENCH_DASHBOARD_KEPT'] ?? 'off,on',
  /** Events waiting on the topic when the backlog scenario's consumer starts; the size (issue 54, item 5). */
  BENCH_BACKLOG_EVENTS: number('BENCH_BACKLOG_EVENTS', 2_000_000),
  /** Rounds of the backlog scenario, each draining the topic with the byte budget and without it. */
  BENCH_BACKLOG_ROUNDS: number('BENCH_BACKLOG_ROUNDS', 2),
  /** Events over 24 months before the retention scenario drops its oldest year; the size (issue 54, item 1). */
  BENCH_RETENTION_EVENTS: number('BENCH_RETENTION_EVENTS', 100_000_000),
};
function keptModes(text: string): ('off' | 'on')[] {
  return text.split(',').map((raw) => {
    const mode = raw.trim();
    if (mode !== 'off' && mode !== 'on') throw new Error(`BENCH_DASHBOARD_KEPT: "${mode}" is neither off nor on`);
    return mode;
  });
}
const scenarios = (env['BENCH_SCENARIOS'] ?? DEFAULT_SCENARIOS.join(',')).split(',').map((s) => s.trim());
const KNOWN_SCENARIOS = [...DEFAULT_SCENARIOS, ...NAMED_SCENARIOS];
for (const s of scenarios) if (!KNOWN_SCENARIOS.includes(s)) throw new Error(`BENCH_SCENARIOS: unknown scenario "${s}"; known: ${KNOWN_SCENARIOS.join(', ')}`);

// Taken before anything of the run's own starts: the load others put on the machine, against which its figures are read.
const started = new Date().toISOString();
const load = machineLoad();

console.error('bench: building dist (the processes run what npm start runs)');
execFileSync('npm', ['run', '--silent', 'build'], { cwd: repoRoot, stdio: 'inherit' });
const infra = await startInfra('local', { withClickHouse: true });
const rows: Row[] = [];
try {
  if (infra.clickhouse === undefined) throw new Error('the benchmark needs the local ClickHouse server');
  console.error('bench: bare Koa, the ceiling');
  const ceiling = await measureCeiling(settings.BENCH_SECONDS);
  rows.push(...ceiling.rows);
  const ctx: BenchContext = {
    seconds: settings.BENCH_SECONDS,
    brokers: infra.brokers,
    clickhouseUrl: infra.clickhouse.url,
    run: randomBytes(3).toString('hex'),
    secret: newSecret(),
    ceiling: ceiling.ceiling,
  };
  const steps: Record<string, () => Promise<Row[]>> = {
    commands: () => measureCommands(ctx),
    ingest: () => measureIngest(ctx, settings.BENCH_INGEST_EVENTS, settings.INGEST_BATCH_SIZE, Math.min(settings.BENCH_INGEST_SWEEP_EVENTS, settings.BENCH_INGEST_EVENTS), settings.BENCH_FRESHNESS_SECONDS),
    feed: () => measureFeed(ctx, settings.BENCH_FEED_SIZES.split(',').map(Number)),
    'feed-scale': () => measureFeedAtScale(ctx, settings.BENCH_FEED_SCALE_SIZES.split(',').map(Number), settings.INGEST_BATCH_SIZE),
    embedded: () => measureEmbedded(ctx, settings.BENCH_EMBEDDED_EVENTS),
    memory: () => measureMemory(ctx, settings.BENCH_SOAK_SECONDS),
    dashboards: () =>
      measureDashboards(ctx, { events: settings.BENCH_DASHBOARD_EVENTS, batch: settings.INGEST_BATCH_SIZE, counts: settings.BENCH_DASHBOARD_COUNTS.split(',').map(Number), seconds: settings.BENCH_DASHBOARD_SECONDS, kept: keptModes(settings.BENCH_DASHBOARD_KEPT) }),
    backlog: () => measureBacklog(ctx, settings.BENCH_BACKLOG_EVENTS, settings.BENCH_BACKLOG_ROUNDS, settings.INGEST_BATCH_SIZE),
    retention: () => measureRetention(ctx, settings.BENCH_RETENTION_EVENTS, settings.INGEST_BATCH_SIZE),
    tail: () => measureTail(ctx, settings.BENCH_TAIL_COUNTS.split(',').map(Number), settings.BENCH_TAIL_RATE, settings.BENCH_TAIL_FAIRNESS !== 0),
  };
  for (const name of scenarios) {
    console.error(`bench: ${name}`);
    const found = await steps[name]!();
    for (const row of found) console.error(`  ${row.measure}: ${row.value} ${row.unit}`);
    rows.push(...found);
  }
} finally {
  await infra.stop();
}
const json = record(rows, settings, { started, load, scenarios });
const path = relative(repoRoot, json);
// Read back as the generator will read it, so a file it would refuse fails here, beside the run that wrote it.
console.log(resultsTables([{ path, file: parseResultFile(readFileSync(json, 'utf8'), path) }]));
console.error(`bench: results in ${path}; \`npm run bench:table\` puts them into BENCHMARKS.md (commit both)`);
