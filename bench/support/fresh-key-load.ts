/**
 * autocannon where every request names a new device (or fleet): each `{uuid}` in the
 * path becomes a fresh UUID per request, as enrollment traffic names a new device each
 * time. Sending one path again and again puts every command on one Kafka key, which is
 * not what users send. In a process of its own; reads a FreshKeySpec as JSON from argv
 * and prints autocannon's JSON result, as `autocannon -j` does, with the cores' worth of
 * CPU the generator itself used (`generatorCores`).
 *   node --import tsx bench/support/fresh-key-load.ts SPEC_JSON
 */
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';

export interface FreshKeySpec {
  /** Origin and path; every `{uuid}` in the path is replaced per request. */
  readonly url: string;
  readonly method: 'POST' | 'PATCH';
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly connections: number;
  readonly seconds: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as FreshKeySpec;
const url = new URL(spec.url);
// URL encodes the braces; the template is matched as it was written.
const template = decodeURI(url.pathname);
// Its own CPU over the run, beside autocannon's figures: the proof that the generator was not the limit.
const cpuBefore = process.cpuUsage();
const started = performance.now();
const result = await autocannon({
  url: url.origin,
  connections: spec.connections,
  duration: spec.seconds,
  headers: { ...spec.headers },
  requests: [
    {
      method: spec.method,
      body: spec.body,
      setupRequest: (request) => ({ ...request, path: template.replace(/\{uuid\}/g, () => randomUUID()) }),
    },
  ],
});
const cpu = process.cpuUsage(cpuBefore);
const generatorCores = (cpu.user + cpu.system) / 1000 / (performance.now() - started);
console.log(JSON.stringify({ ...result, generatorCores }));
