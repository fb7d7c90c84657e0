/**
 * autocannon with a different URL for each request, in a process of its own: the CLI
 * sends one URL again and again, which the gateway's shared page reads would answer from
 * one query for every connection. Reads a LoadSpec and the URLs (taken in turn) as JSON
 * from argv, or from the file named after an `@` (a long URL list outgrows one argument),
 * and prints autocannon's JSON result, as `autocannon -j` does, with the cores' worth of
 * CPU the generator itself used (`generatorCores`).
 *   node --import tsx bench/support/varied-load.ts SPEC_JSON|@FILE
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

interface VariedSpec {
  readonly urls: readonly string[];
  /** The ORG-ID header of each URL, in step with `urls`, when requests act for many organizations. */
  readonly orgIds?: readonly string[];
  readonly headers: Readonly<Record<string, string>>;
  readonly connections: number;
  readonly seconds: number;
}

const arg = process.argv[2] ?? '{}';
const spec = JSON.parse(arg.startsWith('@') ? readFileSync(arg.slice(1), 'utf8') : arg) as VariedSpec;
const first = new URL(spec.urls[0]!);
let next = 0;
const cpuBefore = process.cpuUsage();
const started = performance.now();
const result = await autocannon({
  url: first.origin,
  connections: spec.connections,
  duration: spec.seconds,
  headers: { ...spec.headers },
  requests: [
    {
      method: 'GET',
      setupRequest: (request) => {
        const at = next++ % spec.urls.length;
        const url = new URL(spec.urls[at]!);
        const orgId = spec.orgIds?.[at];
        const headers = orgId === undefined ? request.headers : { ...request.headers, 'org-id': orgId };
        return { ...request, headers, path: `${url.pathname}${url.search}` };
      },
    },
  ],
});
const cpu = process.cpuUsage(cpuBefore);
const generatorCores = (cpu.user + cpu.system) / 1000 / (performance.now() - started);
console.log(JSON.stringify({ ...result, generatorCores }));
