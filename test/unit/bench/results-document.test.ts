import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  latestPerScenario,
  parseResultFile,
  readResultFiles,
  RESULTS_END,
  RESULTS_START,
  resultsSection,
  withResults,
  type NamedResultFile,
} from '../../../bench/support/results-document.js';
import { machineLoad, resultFile, type RecordedRow, type ResultFile, type Row } from '../../../bench/support/results.js';

const row = (scenario: string, measure: string, value: number | null, extra: Partial<RecordedRow> = {}): RecordedRow => ({ scenario, measure, value, unit: 'req/s', ...extra });

const file = (path: string, when: string, rows: readonly RecordedRow[], extra: Partial<ResultFile> = {}): NamedResultFile => ({
  path,
  file: { when, machine: '2 × test CPU', load: null, settings: { BENCH_SECONDS: 10 }, rows, ...extra },
});

/** The table lines (after the header) of one scenario's section in `section`. */
function tableOf(section: string, scenario: string): string[] {
  const start = section.indexOf(`### ${scenario}\n`);
  expect(start, `no table for ${scenario}`).to.be.at.least(0);
  const rest = section.slice(start).split('\n').slice(1);
  const end = rest.findIndex((line) => line.startsWith('### ') || line === RESULTS_END);
  return rest.slice(0, end < 0 ? undefined : end).filter((line) => line.startsWith('| ') && !line.startsWith('| measure'));
}

const DOCUMENT = `# Benchmarks\n\nThe method, by hand.\n\n${RESULTS_START}\n${RESULTS_END}\n\nA line after.\n`;

describe('the benchmarks results section', () => {
  const full = file('bench/results/full.json', '2026-11-25T02:02:10.906Z', [
    row('bare Koa', 'POST, 50 connections', 30_000),
    row('commands', 'enroll', 6_000, { baseline: { name: 'bare Koa POST 50', value: 30_000 } }),
    row('feed', 'first page', 2_000),
  ]);
  const commandsOnly = file('bench/results/later.json', '2026-11-26T10:00:00.000Z', [
    row('bare Koa', 'POST, 50 connections', 20_000),
    row('commands', 'enroll', 5_000, { baseline: { name: 'bare Koa POST 50', value: 20_000 } }),
  ]);

  it('takes each scenario from the newest file that has rows of it, whatever order the files come in', () => {
    for (const files of [
      [full, commandsOnly],
      [commandsOnly, full],
    ]) {
      const picked = latestPerScenario(files);
      expect(picked.map((s) => [s.scenario, s.from.path])).to.deep.equal([
        ['bare Koa', 'bench/results/later.json'],
        ['commands', 'bench/results/later.json'],
        ['feed', 'bench/results/full.json'],
      ]);
      expect(picked.find((s) => s.scenario === 'commands')!.rows.map((r) => r.value)).to.deep.equal([5_000]);
    }
  });

  it('keeps the order scenarios first appeared in, so a newer run of one moves no table', () => {
    const feedOnly = file('bench/results/feed.json', '2026-11-27T00:00:00.000Z', [row('feed', 'first page', 2_500)]);
    expect(latestPerScenario([feedOnly, full]).map((s) => s.scenario)).to.deep.equal(['bare Koa', 'commands', 'feed']);
  });

  it('says under each table which file and run it came from, with the load at its start', () => {
    const loaded = file('bench/results/later.json', '2026-11-26T10:00:00.000Z', commandsOnly.file.rows, { load: { averages: [1.5, 1.25, 0.5], runnable: 3, entities: 400 } });
    const section = resultsSection([full, loaded]);
    expect(section).to.include('### feed\n\nFrom [`bench/results/full.json`](bench/results/full.json): run of 2026-11-25T02:02:10.906Z on 2 × test CPU; load at start not recorded.');
    expect(section).to.include(
      '### commands\n\nFrom [`bench/results/later.json`](bench/results/later.json): run of 2026-11-26T10:00:00.000Z on 2 × test CPU; load at start 1.5 / 1.25 / 0.5 (1 / 5 / 15 min), 3 runnable.',
    );
  });

  it('computes each ratio from the row and its baseline, not from the ratio the file holds', () => {
    const stale = file('bench/results/x.json', '2026-11-25T00:00:00.000Z', [
      row('s', 'a quarter', 50, { baseline: { name: 'base', value: 200 }, ratio: 9, target: '≥ 0.4' }),
      row('s', 'a third', 1, { baseline: { name: 'base', value: 3 } }),
      row('s', 'not measured', null, { baseline: { name: 'base', value: 3 } }),
      row('s', 'no baseline', 7, { note: 'a note' }),
    ]);
    expect(tableOf(resultsSection([stale]), 's')).to.deep.equal([
      '| a quarter | 50 req/s |  |  |  |  | base: 200 | 0.25 | ≥ 0.4 |',
      '| a third | 1 req/s |  |  |  |  | base: 3 | 0.333 |  |',
      '| not measured | — req/s |  |  |  |  | base: 3 | — |  |',
      '| no baseline (a note) | 7 req/s |  |  |  |  |  |  |  |',
    ]);
  });

  it('finds no drift in a document just generated, and finds it after a new file or a figure edited by hand', () => {
    const current = withResults(DOCUMENT, [full]);
    expect(withResults(current, [full])).to.equal(current);
    expect(current.startsWith('# Benchmarks\n\nThe method, by hand.\n\n')).to.equal(true);
    expect(current.endsWith(`${RESULTS_END}\n\nA line after.\n`)).to.equal(true);

    expect(withResults(current, [full, commandsOnly])).to.not.equal(current);
    const edited = current.replace('| enroll | 6,000 req/s', '| enroll | 6,500 req/s');
    expect(withResults(edited, [full])).to.not.equal(edited);
    expect(withResults(edited, [full])).to.equal(current);
  });

  it('refuses a document without its markers', () => {
    expect(() => withResults('# Benchmarks\n', [full])).to.throw(/no <!-- bench:results:start -->/);
  });
});

describe('result files', () => {
  it('reads back what record() writes, a figure it could not measure as null', () => {
    const rows: Row[] = [
      { scenario: 'ingest', measure: 'refused', value: NaN, unit: 'events/s' },
      { scenario: 'ingest', measure: 'ours', value: 60, unit: 'events/s', p50Ms: 1.5, baseline: { name: 'engine', value: 40 } },
    ];
    const written = resultFile(rows, { BENCH_SECONDS: 10, BENCH_FEED_SIZES: '1,2' }, { when: '2026-11-28T00:00:00.000Z', machine: 'm', load: machineLoad(), scenarios: ['ingest'] });
    const read = parseResultFile(JSON.stringify(written, null, 2), 'bench/results/r.json');
    expect(read.rows.map((r) => [r.value, r.ratio])).to.deep.equal([
      [null, undefined],
      [60, 1.5],
    ]);
    expect(read.baselines).to.deep.equal([{ scenario: 'ingest', name: 'engine', value: 40 }]);
    expect(read.scenarios).to.deep.equal(['ingest']);
  });

  it('reads a file of the first format, with no load, scenarios or baselines', () => {
    const old = { when: '2026-11-20T00:00:00.000Z', machine: 'm', settings: { BENCH_SECONDS: 10 }, rows: [{ scenario: 's', measure: 'm', value: 1, unit: 'x', ratio: null }] };
    expect(parseResultFile(JSON.stringify(old), 'old.json').rows).to.have.length(1);
  });

  it('names the file and the field that is wrong', () => {
    const bad = { when: '2026-11-20T00:00:00.000Z', machine: 'm', settings: {}, rows: [{ scenario: 's', measure: 'm', value: '1', unit: 'x' }] };
    expect(() => parseResultFile(JSON.stringify(bad), 'bench/results/bad.json')).to.throw('bench/results/bad.json: rows[0]: value is not a number or null');
    expect(() => parseResultFile('{', 'bench/results/bad.json')).to.throw('bench/results/bad.json: not JSON');
    expect(() => parseResultFile(JSON.stringify({ ...bad, when: 'yesterday' }), 'b.json')).to.throw('b.json: when is not a date');
  });

  it('reads every .json directly in the folder, not the profiles beside them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-results-'));
    try {
      mkdirSync(join(dir, 'profiles'));
      writeFileSync(join(dir, 'profiles', 'p.json'), '{');
      writeFileSync(join(dir, 'notes.txt'), 'not a result');
      writeFileSync(join(dir, 'b.json'), JSON.stringify(file('', '2026-11-25T00:00:00.000Z', [row('s', 'm', 1)]).file));
      writeFileSync(join(dir, 'a.json'), JSON.stringify(file('', '2026-11-26T00:00:00.000Z', [row('s', 'm', 2)]).file));
      expect(readResultFiles(dir).map((f) => f.path.split('/').pop())).to.deep.equal(['a.json', 'b.json']);
      expect(readResultFiles(join(dir, 'absent'))).to.deep.equal([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes the load from /proc/loadavg where there is one', () => {
    const load = machineLoad();
    if (load === null) return;
    expect(load.averages).to.have.length(3);
    for (const n of [...load.averages, load.runnable, load.entities]) expect(n).to.be.a('number').and.at.least(0);
  });
});
