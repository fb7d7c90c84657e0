/**
 * The live tail's load generator, a process of its own: opens TAILS streams over PROJECTS
 * projects (each project its own organization, one caller per project), and with BROKERS
 * set sends RATE events a second for SECONDS to TOPIC, each carrying its send time, then
 * reports what arrived. Without BROKERS it only holds the streams open until SIGTERM.
 * With ONE_CALLER=1 every stream is opened by one token naming every organization.
 *   node --import tsx bench/support/tail-clients.ts '<json spec>'
 * Prints `{"opened":…}` once the streams are open, and a JSON summary at the end.
 */
import { randomUUID } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { Kafka, logLevel } from 'kafkajs';
import { permissions } from '../../src/auth/principal.js';
import { signHs256Token } from '../../src/auth/sign-token.js';
import { decodeTailPosition } from '../../src/feed/tail/tail-position.js';
import { summarize } from './latency.js';

interface Spec {
  readonly url: string;
  readonly secret: string;
  readonly tails: number;
  readonly projects: number;
  readonly oneCaller?: boolean;
  readonly brokers?: readonly string[];
  readonly topic?: string;
  readonly rate?: number;
  readonly seconds?: number;
  /** How long to wait for deliveries after the last send. */
  readonly drainMs?: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as Spec;
const projects = Array.from({ length: spec.projects }, () => ({ orgId: randomUUID(), projectId: randomUUID() }));
const allOrgs = projects.map((p) => p.orgId);
const delays: number[] = [];
// The delay split at the row's ingested_at (the store's clock, on this machine the same as ours):
// produce → stored is Kafka, the consumer's batch wait and the insert; stored → received is the tail's own part.
const toStored: number[] = [];
const fromStored: number[] = [];
let delivered = 0;
let refused = 0;
const refusals = new Map<string, number>();
const sockets: IncomingMessage[] = [];
let closedEarly = 0;

async function tokenFor(i: number, orgId: string): Promise<string> {
  return signHs256Token(spec.secret, {
    sub: spec.oneCaller === true ? 'one-caller' : `dashboard-${i}`,
    orgIds: spec.oneCaller === true ? allOrgs : [orgId],
    scopes: permissions,
    ttlSeconds: 4 * 3600,
  });
}

/** Opens one stream; counts each event's delay from its send time, parsing only complete `data:` lines. */
function open(project: { orgId: string; projectId: string }, token: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(`${spec.url}/core/api/v1/projects/${project.projectId}/events/stream`, {
      agent: false,
      headers: { authorization: `Bearer ${token}`, 'org-id': project.orgId, accept: 'text/event-stream' },
    });
    req.on('error', () => resolve(false));
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => {
          refusals.set(body.slice(0, 120), (refusals.get(body.slice(0, 120)) ?? 0) + 1);
          resolve(false);
        });
        return;
      }
      sockets.push(res);
      let pending = '';
      let lastId: string | undefined;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        pending += chunk;
        let nl = pending.indexOf('\n');
        while (nl !== -1) {
          const line = pending.slice(0, nl);
          pending = pending.slice(nl + 1);
          if (line.startsWith('id: ')) lastId = line.slice(4);
          else if (line.startsWith('data: {"id"')) {
            const sent = /"sent_ms":(\d+)/.exec(line);
            if (sent !== null) {
              const now = Date.now();
              delays.push(now - Number(sent[1]));
              delivered += 1;
              const stored = lastId === undefined ? undefined : decodeTailPosition(lastId);
              if (stored !== undefined) {
                const storedMs = Date.parse(`${stored.ingestedAt.replace(' ', 'T')}Z`);
                toStored.push(storedMs - Number(sent[1]));
                fromStored.push(now - storedMs);
              }
            }
          }
          nl = pending.indexOf('\n');
        }
      });
      res.on('close', () => (closedEarly += 1));
      resolve(true);
    });
    req.end();
  });
}

const cpuStart = process.cpuUsage();
const wallStart = performance.now();
const perProject = Math.ceil(spec.tails / spec.projects);
let opened = 0;
for (let i = 0; i < spec.tails; i += 200) {
  const batch = await Promise.all(
    Array.from({ length: Math.min(200, spec.tails - i) }, async (_, k) => {
      const n = i + k;
      const project = projects[Math.floor(n / perProject) % projects.length]!;
      return open(project, await tokenFor(Math.floor(n / perProject), project.orgId));
    }),
  );
  for (const ok of batch) if (ok) opened += 1;
  else refused += 1;
}
console.log(JSON.stringify({ opened, refused, refusals: Object.fromEntries(refusals) }));

let summary: Record<string, unknown> = {};
if (spec.brokers !== undefined && spec.brokers.length > 0) {
  await new Promise((r) => setTimeout(r, 3000));
  const kafka = new Kafka({ clientId: 'bench-tail-producer', brokers: [...spec.brokers], logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ idempotent: true });
  await producer.connect();
  const rate = spec.rate ?? 200;
  const seconds = spec.seconds ?? 30;
  const tailsOf = new Map<string, number>();
  for (let n = 0; n < opened; n++) {
    const key = projects[Math.floor(n / perProject) % projects.length]!.projectId;
    tailsOf.set(key, (tailsOf.get(key) ?? 0) + 1);
  }
  let expected = 0;
  let sent = 0;
  const started = Date.now();
  // Every 100 ms the events due by then, so the rate is steady and a slow send does not lose any.
  while (Date.now() - started < seconds * 1000) {
    const due = Math.floor(((Date.now() - started) / 1000) * rate);
    const messages = [];
    for (; sent < due; sent++) {
      const p = projects[sent % projects.length]!;
      expected += tailsOf.get(p.projectId) ?? 0;
      const event = {
        id: randomUUID(),
        org_id: p.orgId,
        project_id: p.projectId,
        domain: 'telemetry',
        entity: 'reading',
        action: 'recorded',
        occurred_at: new Date().toISOString(),
        correlation_id: null,
        device_id: randomUUID(),
        fleet_id: null,
        payload: { sent_ms: Date.now(), temperature: 21.5 },
        source_service: 'bench',
        span_id: null,
        trace_id: null,
      };
      messages.push({ key: p.projectId, value: JSON.stringify(event) });
    }
    if (messages.length > 0) await producer.send({ topic: spec.topic!, messages });
    await new Promise((r) => setTimeout(r, 100));
  }
  await producer.disconnect();
  const lastSend = Date.now();
  const drainMs = spec.drainMs ?? 15_000;
  while (delivered < expected && Date.now() - lastSend < drainMs) await new Promise((r) => setTimeout(r, 100));
  const maxMs = delays.reduce((m, d) => Math.max(m, d), 0);
  const part = (xs: number[]) => {
    const { p50Ms, p99Ms } = summarize(xs);
    return { p50Ms, p99Ms, maxMs: xs.at(-1) ?? NaN };
  };
  summary = { sent, expected, delivered, maxMs, ...summarize(delays), toStored: part(toStored), fromStored: part(fromStored) };
  const cpu = process.cpuUsage(cpuStart);
  summary['generatorCores'] = Number(((cpu.user + cpu.system) / 1000 / (performance.now() - wallStart)).toFixed(2));
  summary['closedEarly'] = closedEarly;
  console.log(JSON.stringify(summary));
  for (const s of sockets) s.destroy();
  process.exit(0);
} else {
  process.on('SIGTERM', () => {
    for (const s of sockets) s.destroy();
    process.exit(0);
  });
  // Holds the streams until told to stop.
  setInterval(() => {}, 60_000);
}
