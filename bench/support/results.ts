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
  /** The target for this ratio or figure, when it sets one. */
  readonly target?: string;
  readonly note?: string;
}

/** JSON has no NaN: a figure a scenario could not measure (NaN in its Row) is written as null. */
export type Figure = number | null;

/** A Row as a result file holds it. */
export interface RecordedRow {
  readonly scenario: string;
  readonly measure: string;
  readonly value: Figure;
  readonly unit: string;
  readonly p50Ms?: Figure;
  readonly p99Ms?: Figure;
  readonly p999Ms?: Figure;
  readonly errors?: Figure;
  readonly baseline?: { readonly name: string; readonly value: Figure };
  readonly target?: string;
  readonly note?: string;
  /** value / baseline.value as the run saw it; the table computes it again from the two. */
  readonly ratio?: Figure;
}

/** /proc/loadavg when the run began: a figure from a busy machine is read with this beside it. */
export interface MachineLoad {
  /** Load averages over 1, 5 and 15 minutes. */
  readonly averages: readonly [number, number, number];
  /** Kernel scheduling entities runnable at that moment, and how many existed. */
  readonly runnable: number;
  readonly entities: number;
}

/** A distinct baseline the run's ratios were read against, by the scenario that used it. */
export interface RecordedBaseline {
  readonly scenario: string;
  readonly name: string;
  readonly value: Figure;
}

/**
 * bench/results/<time>.json: one run. Files written before load, scenarios, baselines and
 * source were added hold only when, machine, settings and rows, and are still read.
 */
export interface ResultFile {
  /** When the file was written, at the end of the run (ISO 8601); it names the file too. */
  readonly when: string;
  readonly started?: string;
  /** machine() of the machine that ran it. */
  readonly machine: string;
  /** null where it was not recorded (a converted table, a machine without /proc). */
  readonly load?: MachineLoad | null;
  /** BENCH_SCENARIOS of the run. */
  readonly scenarios?: readonly string[];
  readonly settings: Readonly<Record<string, string | number>>;
  readonly baselines?: readonly RecordedBaseline[];
  readonly rows: readonly RecordedRow[];
  /** Where the figures came from when no run of `npm run bench` wrote them here. */
  readonly source?: string;
  readonly note?: string;
}

/** value / baseline, to three places; NaN where either was not measured, undefined where there is no baseline. */
export function ratio(row: { readonly value: Figure; readonly baseline?: { readonly value: Figure } }): number | undefined {
  if (row.baseline === undefined || row.baseline.value === 0) return undefined;
  if (row.value === null || row.baseline.value === null) return NaN;
  return Number((row.value / row.baseline.value).toFixed(3));
}

export function machine(): string {
  const cores = cpus();
  return `${cores.length} × ${cores[0]?.model.trim() ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ${type()}, Node ${process.versions.node}`;
}

/** null off Linux, where there is no /proc/loadavg to read. */
export function machineLoad(): MachineLoad | null {
  let text: string;
  try {
    text = readFileSync('/proc/loadavg', 'utf8');
  } catch {
    return null;
  }
  const [one, five, fifteen, counts] = text.trim().split(/\s+/);
  const [runnable, entities] = (counts ?? '').split('/').map(Number);
  const averages = [Number(one), Number(five), Number(fifteen)] as const;
  if (![...averages, runnable, entities].every((n) => n !== undefined && Number.isFinite(n))) return null;
  return { averages, runnable: runnable!, entities: entities! };
}

const figure = (n: number): Figure => (Number.isFinite(n) ? n : null);
const optionalFigure = (n: number | undefined): Figure | undefined => (n === undefined ? undefined : figure(n));

/** The file's content for a run's rows; `when` and the run's start and load come from the caller. */
export function resultFile(
  rows: readonly Row[],
  settings: Readonly<Record<string, string | number>>,
  run: { readonly when: string; readonly started?: string; readonly machine: string; readonly load: MachineLoad | null; readonly scenarios?: readonly string[] },
): ResultFile {
  const baselines = new Map<string, RecordedBaseline>();
  for (const row of rows) {
    if (row.baseline === undefined) continue;
    const b: RecordedBaseline = { scenario: row.scenario, name: row.baseline.name, value: figure(row.baseline.value) };
    baselines.set(JSON.stringify(b), b);
  }
  return {
    when: run.when,
    started: run.started,
    machine: run.machine,
    load: run.load,
    scenarios: run.scenarios,
    settings,
    baselines: [...baselines.values()],
    rows: rows.map(
      (r): RecordedRow => ({
        ...r,
        value: figure(r.value),
        p50Ms: optionalFigure(r.p50Ms),
        p99Ms: optionalFigure(r.p99Ms),
        p999Ms: optionalFigure(r.p999Ms),
        errors: optionalFigure(r.errors),
        baseline: r.baseline === undefined ? undefined : { name: r.baseline.name, value: figure(r.baseline.value) },
        ratio: optionalFigure(ratio(r)),
      }),
    ),
  };
}

export const RESULTS_DIR = resolve(repoRoot, 'bench', 'results');

/** File name for a run written at `when`: its time, with the characters some file systems refuse replaced. */
export const resultFileName = (when: string) => `${when.replace(/[:.]/g, '-')}.json`;

/**
 * Writes the run to bench/results/<time>.json, to be committed: BENCHMARKS.md's table is
 * generated from these files (`npm run bench:table`), never edited by hand. `run.load` is
 * machineLoad() as the run began; a caller that did not take it gets the load now.
 */
export function record(
  rows: readonly Row[],
  settings: Readonly<Record<string, string | number>>,
  run: { readonly started?: string; readonly load?: MachineLoad | null; readonly scenarios?: readonly string[] } = {},
): string {
  const when = new Date().toISOString();
  const json = resolve(RESULTS_DIR, resultFileName(when));
  mkdirSync(dirname(json), { recursive: true });
  const file = resultFile(rows, settings, { when, started: run.started, machine: machine(), load: run.load === undefined ? machineLoad() : run.load, scenarios: run.scenarios });
  writeFileSync(json, `${JSON.stringify(file, null, 2)}\n`);
  return json;
}
