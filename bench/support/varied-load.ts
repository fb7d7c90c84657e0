/**
 * autocannon with a different URL for each request, in a process of its own: the CLI
 * sends one URL again and again, which the gateway's shared page reads would answer from
 * one query for every connection. Reads a LoadSpec and the URLs (taken in turn) as JSON
 * from argv and prints autocannon's JSON result, as `autocannon -j` does.
 *   node --import tsx bench/support/varied-load.ts SPEC_JSON
 */
import autocannon from 'autocannon';

interface VariedSpec {
  readonly urls: readonly string[];
  readonly headers: Readonly<Record<string, string>>;
  readonly connections: number;
  readonly seconds: number;
}

const spec = JSON.parse(process.argv[2] ?? '{}') as VariedSpec;
const first = new URL(spec.urls[0]!);
let next = 0;
const result = await autocannon({
  url: first.origin,
  connections: spec.connections,
  duration: spec.seconds,
  headers: { ...spec.headers },
  requests: [
    {
      method: 'GET',
      setupRequest: (request) => {
        const url = new URL(spec.urls[next++ % spec.urls.length]!);
        return { ...request, path: `${url.pathname}${url.search}` };
      },
    },
  ],
});
console.log(JSON.stringify(result));
