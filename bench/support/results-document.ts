/**
 * BENCHMARKS.md's results section, generated from the result files in bench/results/ as
 * ClickBench generates its table from its JSON files: a new run adds a file and changes
 * the table, never a sentence. Each scenario's table comes from the newest file that has
 * rows of it, so a run of some scenarios replaces only theirs.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot } from '../../test/support/processes.js';
import { ratio, RESULTS_DIR, type Figure, type RecordedRow, type ResultFile } from './results.js';

export const RESULTS_START = '<!-- bench:results:start -->';
export const RESULTS_END = '<!-- bench:results:end -->';

/** A result file and the path it is read from, relative to the repository, as the table links it. */
export interface NamedResultFile {
  readonly path: string;
  readonly file: ResultFile;
}

/** One scenario's rows, from the newest file that has any. */
export interface ScenarioResults {
  readonly scenario: string;
  readonly from: NamedResultFile;
  readonly rows: readonly RecordedRow[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isFigure = (v: unknown): v is Figure => v === null || typeof v === 'number';

function must(ok: boolean, where: string, what: string): asserts ok {
  if (!ok) throw new Error(`${where}: ${what}`);
}

function checkRow(row: unknown, where: string): void {
  must(isObject(row), where, 'is not an object');
  for (const key of ['scenario', 'measure', 'unit']) must(typeof row[key] === 'string', where, `${key} is not a string`);
  must(isFigure(row['value']), where, 'value is not a number or null');
  for (const key of ['p50Ms', 'p99Ms', 'p999Ms', 'errors', 'ratio']) must(row[key] === undefined || isFigure(row[key]), where, `${key} is not a number or null`);
  for (const key of ['target', 'note']) must(row[key] === undefined || typeof row[key] === 'string', where, `${key} is not a string`);
  const baseline = row['baseline'];
  if (baseline === undefined) return;
  must(isObject(baseline) && typeof baseline['name'] === 'string' && isFigure(baseline['value']), where, 'baseline is not { name, value }');
}

/** A result file's text, checked field by field so that a bad file is named with what is wrong in it. */
export function parseResultFile(text: string, path: string): ResultFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path}: not JSON`, { cause: error });
  }
  must(isObject(parsed), path, 'is not an object');
  must(typeof parsed['when'] === 'string' && !Number.isNaN(Date.parse(parsed['when'])), path, 'when is not a date');
  must(typeof parsed['machine'] === 'string', path, 'machine is not a string');
  const settings = parsed['settings'];
  must(isObject(settings) && Object.values(settings).every((v) => typeof v === 'string' || typeof v === 'number'), path, 'settings is not an object of strings and numbers');
  const load = parsed['load'];
  must(load === undefined || load === null || (isObject(load) && Array.isArray(load['averages']) && load['averages'].length === 3), path, 'load is not { averages, runnable, entities } or null');
  for (const key of ['started', 'source', 'note']) must(parsed[key] === undefined || typeof parsed[key] === 'string', path, `${key} is not a string`);
  const scenarios = parsed['scenarios'];
  must(scenarios === undefined || (Array.isArray(scenarios) && scenarios.every((s) => typeof s === 'string')), path, 'scenarios is not a list of names');
  const rows = parsed['rows'];
  must(Array.isArray(rows), path, 'rows is not a list');
  rows.forEach((row, i) => checkRow(row, `${path}: rows[${i}]`));
  return parsed as unknown as ResultFile;
}

/** Every *.json directly in `dir` (bench/results/profiles and the like are not results). */
export function readResultFiles(dir: string = RESULTS_DIR): NamedResultFile[] {
  let names: string[];
  try {
    names = readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isFile() && e.name.endsWith('.json'))
      .map((e) => e.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return names.sort().map((name) => {
    const path = relative(repoRoot, join(dir, name)).split('\\').join('/');
    return { path, file: parseResultFile(readFileSync(join(dir, name), 'utf8'), path) };
  });
}

/**
 * Each scenario with the rows of the newest file (by its `when`; the path breaks a tie)
 * that has any, in the order scenarios first appear from the oldest file on, so that a
 * newer run of one scenario leaves the order of the tables as it was.
 */
export function latestPerScenario(files: readonly NamedResultFile[]): ScenarioResults[] {
  const oldestFirst = [...files].sort((a, b) => Date.parse(a.file.when) - Date.parse(b.file.when) || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const newest = new Map<string, NamedResultFile>();
  for (const named of oldestFirst) for (const row of named.file.rows) newest.set(row.scenario, named);
  return [...newest].map(([scenario, from]) => ({ scenario, from, rows: from.file.rows.filter((r) => r.scenario === scenario) }));
}

const fmt = (n: Figure | undefined) => (n === undefined ? '' : n === null || !Number.isFinite(n) ? '—' : n.toLocaleString('en-US'));
/** A pipe inside a cell would end it. */
const cell = (text: string) => text.replace(/\|/g, '\\|');

function loadLine(file: ResultFile): string {
  if (file.load === undefined || file.load === null) return 'load at start not recorded';
  const [one, five, fifteen] = file.load.averages;
  return `load at start ${one} / ${five} / ${fifteen} (1 / 5 / 15 min), ${file.load.runnable} runnable`;
}

function scenarioTable({ scenario, from, rows }: ScenarioResults): string {
  const { file } = from;
  const about = [`From [\`${from.path}\`](${from.path}): run of ${file.when} on ${file.machine}; ${loadLine(file)}.`];
  if (file.source !== undefined) about.push(`Source: ${file.source}.`);
  if (file.note !== undefined) about.push(file.note);
  const lines = [
    `### ${scenario}`,
    '',
    about.join(' '),
    '',
    '| measure | value | p50 ms | p99 ms | p99.9 ms | errors | baseline (same run) | ratio | target |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const measure = row.note === undefined ? row.measure : `${row.measure} (${row.note})`;
    const base = row.baseline === undefined ? '' : `${row.baseline.name}: ${fmt(row.baseline.value)}`;
    const cells = [measure, `${fmt(row.value)} ${row.unit}`, fmt(row.p50Ms), fmt(row.p99Ms), fmt(row.p999Ms), fmt(row.errors), base, fmt(ratio(row)), row.target ?? ''];
    lines.push(`| ${cells.map(cell).join(' | ')} |`);
  }
  return lines.join('\n');
}

/** A table per scenario, each saying which file and run it is from. */
export function resultsTables(files: readonly NamedResultFile[]): string {
  const scenarios = latestPerScenario(files);
  return scenarios.length === 0 ? 'No result files in bench/results/ yet.' : scenarios.map(scenarioTable).join('\n\n');
}

/** The section between the markers, markers included. */
export function resultsSection(files: readonly NamedResultFile[]): string {
  const head = `<!-- Generated by \`npm run bench:table\` from bench/results/*.json; \`npm run bench:check\` (in npm test) fails when it differs. -->`;
  return `${RESULTS_START}\n${head}\n\n${resultsTables(files)}\n${RESULTS_END}`;
}

/** `document` with its results section generated from `files`; the text around the markers is left as it is. */
export function withResults(document: string, files: readonly NamedResultFile[]): string {
  const at = document.indexOf(RESULTS_START);
  const end = document.indexOf(RESULTS_END);
  if (at < 0 || end < at) throw new Error(`BENCHMARKS.md has no ${RESULTS_START} … ${RESULTS_END} section`);
  return document.slice(0, at) + resultsSection(files) + document.slice(end + RESULTS_END.length);
}
