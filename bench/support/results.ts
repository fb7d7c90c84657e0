import { cpus, totalmem, type } from 'node:os';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { repoRoot } from '../../test/support/processes.js';

/** One line of the results: a figure and the baseline of the same run it is read against. */
export interface Row {
  readonly scenario: string;
  readonly measure: string;
  readonly value: number;
  readonly unit: string;
  readonly p50Ms?: number;
  readonly p99Ms?: number;
  readonly p999Ms?: number;
  readonly errors?: number;
  /** What the value is divided by, measured in the same run. */
  readonly baseline?: { readonly name: string; readonly value: number };
  /** The issue's target for this ratio or figure, when it sets one. */
  readonly target?: string;
  readonly note?: string;
}

export const ratio = (row: Row): number | undefined =>
  row.baseline === undefined || row.baseline.value === 0 ? undefined : Number((row.value / row.baseline.value).toFixed(3));

export function machine(): string {
  const cores = cpus();
  return `${cores.length} × ${cores[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${type()}, Node ${process.versions.node}`;
}

const fmt = (n: number | null | undefined) => (n === undefined ? '' : n === null || !Number.isFinite(n) ? '—' : n.toLocaleString('en-US'));

export function markdownTable(rows: readonly Row[]): string {
  const lines = [
    '| scenario | measure | value | p50 ms | p99 ms | p99.9 ms | errors | baseline (same run) | ratio | target |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const base = row.baseline === undefined ? '' : `${row.baseline.name}: ${fmt(row.baseline.value)}`;
    lines.push(
      `| ${row.scenario} | ${row.measure}${row.note === undefined ? '' : ` (${row.note})`} | ${fmt(row.value)} ${row.unit} | ${fmt(row.p50Ms)} | ${fmt(row.p99Ms)} | ${fmt(row.p999Ms)} | ${fmt(row.errors)} | ${base} | ${fmt(ratio(row))} | ${row.target ?? ''} |`,
    );
  }
  return lines.join('\n');
}

const START = '<!-- bench:latest:start -->';
const END = '<!-- bench:latest:end -->';

/**
 * Writes the run to bench/results/<time>.json and, for a run of every scenario, puts the
 * table into BENCHMARKS.md between its markers with the machine and the date, so the
 * document always shows the last full run.
 */
export function record(rows: readonly Row[], settings: Readonly<Record<string, string | number>>, options: { readonly document: boolean }): string {
  const when = new Date().toISOString();
  const json = resolve(repoRoot, 'bench', 'results', `${when.replace(/[:.]/g, '-')}.json`);
  mkdirSync(dirname(json), { recursive: true });
  writeFileSync(json, `${JSON.stringify({ when, machine: machine(), settings, rows: rows.map((r) => ({ ...r, ratio: ratio(r) })) }, null, 2)}\n`);
  if (!options.document) return json;
  const doc = resolve(repoRoot, 'BENCHMARKS.md');
  const text = readFileSync(doc, 'utf8');
  const at = text.indexOf(START);
  const end = text.indexOf(END);
  if (at < 0 || end < at) throw new Error(`BENCHMARKS.md has no ${START} … ${END} section`);
  const settingsLine = Object.entries(settings)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  const section = `${START}\nRun ${when} on ${machine()}; ${settingsLine}.\n\n${markdownTable(rows)}\n${END}`;
  writeFileSync(doc, text.slice(0, at) + section + text.slice(end + END.length));
  return json;
}
