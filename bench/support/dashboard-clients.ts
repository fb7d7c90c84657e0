/**
 * The dashboards' load generator, a process of its own: each project dashboard asks for its
 * project's first page every PROJECT_PERIOD_MS, each device dashboard for its device's
 * first page every DEVICE_PERIOD_MS, each at a phase of its own, for SECONDS. Latency is
 * from the request's start to its body read. A sample of the answers is kept with the
 * wall-clock time each was asked at, so the bench can compare them with the store after.
 *   node --import tsx bench/support/dashboard-clients.ts SPEC_FILE RESULT_FILE
 * SPEC_FILE holds a DashboardSpec; at the end RESULT_FILE holds a DashboardRun (too large
 * to print: a pipe is cut at exit), and `{"done":<pages>}` is printed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { permissions } from '../../src/auth/principal.js';
import { signHs256Token } from '../../src/auth/sign-token.js';
import { summarize } from './latency.js';

/** One dashboard: the page it polls. */
export interface Dashboard {
  readonly orgId: string;
  readonly projectId: string;
  readonly deviceId?: string;
}

export interface DashboardSpec {
  readonly url: string;
  readonly secret: string;
  readonly projects: readonly Dashboard[];
  readonly devices: readonly Dashboard[];
  readonly projectPeriodMs: number;
  readonly devicePeriodMs: number;
  readonly seconds: number;
  /** At most this many answers are kept for the staleness check, spread over the run. */
  readonly samples: number;
  readonly limit: number;
}

/** An answer as the staleness check reads it. */
export interface AnsweredPage {
  readonly dashboard: Dashboard;
  /** Date.now() as the request was sent. */
  readonly askedAtMs: number;
  readonly ids: readonly string[];
  /** The page's last item when the page was full (its range ends there); absent: the page holds the whole range. */
  readonly last?: { readonly occurred_at: string; readonly id: string };
}

export interface DashboardRun {
  readonly pages: number;
  readonly perSecond: number;
  readonly project: { readonly p50Ms: number; readonly p99Ms: number; readonly p999Ms: number; readonly pages: number };
  readonly device: { readonly p50Ms: number; readonly p99Ms: number; readonly p999Ms: number; readonly pages: number };
  /** Answers other than 200, by status ("error" for a failed connection). */
  readonly failures: Readonly<Record<string, number>>;
  readonly generatorCores: number;
  /** The largest delay of a poll behind its schedule with its last answer in: above a few ms, the generator was the limit. */
  readonly maxLateMs: number;
  /** Polls that came due while the dashboard's last answer was still out (sent when it came). */
  readonly late: number;
  readonly samples: readonly AnsweredPage[];
}

interface PageBody {
  readonly data: { readonly items: readonly { readonly id: string; readonly occurred_at: string }[] };
}

const [specFile = '', resultFile = ''] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specFile, 'utf8')) as DashboardSpec;
const orgIds = [...new Set([...spec.projects, ...spec.devices].map((d) => d.orgId))];
const token = await signHs256Token(spec.secret, { sub: 'dashboards', orgIds, scopes: permissions, ttlSeconds: 4 * 3600 });
// Kept-alive sockets, as a browser's: a poll does not pay for a connection.
const agent = new Agent({ keepAlive: true, maxSockets: 512 });
const latencies = { project: [] as number[], device: [] as number[] };
const failures: Record<string, number> = {};
const samples: AnsweredPage[] = [];
const expectedPages = (spec.projects.length * spec.seconds * 1000) / spec.projectPeriodMs + (spec.devices.length * spec.seconds * 1000) / spec.devicePeriodMs;
const sampleEvery = Math.max(1, Math.floor(expectedPages / spec.samples));
let answered = 0;
let maxLateMs = 0;
/** Polls that came due while the dashboard's last answer was still out. */
let late = 0;
/** A dashboard gives up on an answer after this, as a browser's fetch with a timeout does. */
const TIMEOUT_MS = 30_000;

function get(dashboard: Dashboard): Promise<{ status: number; body: string }> {
  const query = new URLSearchParams({ limit: String(spec.limit), ...(dashboard.deviceId === undefined ? {} : { device_id: dashboard.deviceId }) });
  return new Promise((resolve) => {
    const req = request(`${spec.url}/core/api/v1/projects/${dashboard.projectId}/events?${query.toString()}`, {
      agent,
      headers: { authorization: `Bearer ${token}`, 'org-id': dashboard.orgId },
    });
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error('timeout')));
    req.on('error', (error) => resolve({ status: error.message === 'timeout' ? -1 : 0, body: '' }));
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.end();
  });
}

async function poll(dashboard: Dashboard, kind: 'project' | 'device'): Promise<void> {
  const askedAtMs = Date.now();
  const t0 = performance.now();
  const { status, body } = await get(dashboard);
  latencies[kind].push(performance.now() - t0);
  if (status !== 200) {
    const key = status === 0 ? 'error' : status === -1 ? `no answer in ${TIMEOUT_MS / 1000} s` : String(status);
    failures[key] = (failures[key] ?? 0) + 1;
    return;
  }
  answered += 1;
  if (answered % sampleEvery !== 0 || samples.length >= spec.samples) return;
  const items = (JSON.parse(body) as PageBody).data.items;
  const last = items.length >= spec.limit ? items.at(-1) : undefined;
  samples.push({ dashboard, askedAtMs, ids: items.map((i) => i.id), ...(last === undefined ? {} : { last: { occurred_at: last.occurred_at, id: last.id } }) });
}

/**
 * Polls on a schedule from the run's start, so a quick answer does not shift the next poll.
 * As a dashboard does, it never has two polls out: a poll due while the last answer is
 * still out goes when it comes, and counts as late.
 */
async function dashboardLoop(dashboard: Dashboard, kind: 'project' | 'device', periodMs: number, phaseMs: number, endMs: number): Promise<void> {
  for (let due = performance.now() + phaseMs; due < endMs; due += periodMs) {
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    else {
      late += 1;
      due = performance.now();
      if (due >= endMs) return;
    }
    maxLateMs = Math.max(maxLateMs, performance.now() - due);
    await poll(dashboard, kind);
  }
}

const cpuStart = process.cpuUsage();
const wallStart = performance.now();
const endMs = wallStart + spec.seconds * 1000;
// Phases spread evenly over the period, so the polls come at a steady rate, as independent dashboards do.
await Promise.all([
  ...spec.projects.map((d, k) => dashboardLoop(d, 'project', spec.projectPeriodMs, (k * spec.projectPeriodMs) / spec.projects.length, endMs)),
  ...spec.devices.map((d, k) => dashboardLoop(d, 'device', spec.devicePeriodMs, (k * spec.devicePeriodMs) / spec.devices.length, endMs)),
]);
const seconds = (performance.now() - wallStart) / 1000;
const cpu = process.cpuUsage(cpuStart);
const pages = latencies.project.length + latencies.device.length;
const run: DashboardRun = {
  pages,
  perSecond: Number((pages / seconds).toFixed(1)),
  project: { ...summarize(latencies.project), pages: latencies.project.length },
  device: { ...summarize(latencies.device), pages: latencies.device.length },
  failures,
  generatorCores: Number(((cpu.user + cpu.system) / 1000 / (seconds * 1000)).toFixed(2)),
  maxLateMs: Math.round(maxLateMs),
  late,
  samples,
};
writeFileSync(resultFile, JSON.stringify(run));
agent.destroy();
console.log(JSON.stringify({ done: pages }));
