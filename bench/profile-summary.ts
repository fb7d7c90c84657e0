/**
 * Where a profiled process spent its CPU: self time per function, summed over every
 * .cpuprofile that BENCH_CPU_PROF=1 left in bench/results/profiles (or the files given).
 * PROFILE_BY=module sums it per package or source file instead, and PROFILE_BY=layer per
 * layer of a request's path (HTTP, Kafka client, logging, ...): a flat profile, where no
 * function stands out, still shows which layer the time goes to. PROFILE_REQUESTS=N adds
 * each layer's busy microseconds per request, for a profile that served N requests.
 *   npm run bench:profile [-- FILE.cpuprofile ...]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot } from '../test/support/processes.js';
import { PROFILE_DIR } from './support/bench-process.js';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const TOP = Number(process.env['PROFILE_TOP'] ?? 25);
const BY = process.env['PROFILE_BY'];
const REQUESTS = Number(process.env['PROFILE_REQUESTS'] ?? NaN);

function where(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.startsWith('file://') ? relative(repoRoot, url.slice('file://'.length)) : url;
  if (BY === 'module') return moduleOf(file, functionName);
  if (BY === 'layer') return layerOf(moduleOf(file, functionName));
  return `${functionName || '(anonymous)'} ${file === '' ? '' : `${file}:${lineNumber + 1}`}`.trim();
}

/** A dependency's package, one of our files, Node's own module, or V8's pseudo-frame (garbage collector, program). */
function moduleOf(file: string, functionName: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (pkg !== null) return pkg[1]!;
  if (file === '') return functionName.startsWith('(') ? functionName : '(native)';
  return file;
}

const KOA_STACK =
  /^(koa|@koa\/router|koa-compose|koa-bodyparser|co-body|raw-body|inflation|type-is|mime-types|mime-db|media-typer|content-type|delegates|on-finished|ee-first|statuses|http-errors|vary|cookies|accepts|negotiator|fresh|parseurl|encodeurl|escape-html|destroy|only|http-assert|depd|bytes|iconv-lite|unpipe|path-to-regexp)$/;

/** The layer of a request's path a module belongs to; V8's pseudo-frames stay themselves. */
function layerOf(module: string): string {
  if (module.startsWith('(') && module !== '(native)') return module;
  if (module === 'kafkajs') return 'kafkajs';
  if (/^node:(internal\/)?buffer$/.test(module)) return "Buffer allocations and copies (kafkajs's encoder, on the command path)";
  if (/^(pino|sonic-boom|fast-redact|quick-format-unescaped|atomic-sleep)$/.test(module) || /\/observability\/(logger|redact)\.js$/.test(module)) return 'logging';
  if (module === 'prom-client' || /\/(metrics\/|http\/http-metrics\.js$)/.test(module)) return 'metrics';
  if (/^(ajv|ajv-formats|fast-uri|fast-deep-equal)$/.test(module) || /\/src\/(schemas|json)\//.test(module)) return 'validation';
  if (module === 'jose' || /\/src\/(auth\/|http\/authenticate\.js$)/.test(module)) return 'authentication';
  if (KOA_STACK.test(module)) return 'Koa, its router and body reader';
  if (module.startsWith('node:')) return "Node's HTTP server, sockets, streams, timers";
  if (module === '(native)') return 'native calls (socket writes, hashing, JSON built-ins)';
  if (/^(dist\/)?src\//.test(module)) return 'our other code (request context, commands, publisher, ingest)';
  return `other: ${module}`;
}

const files = process.argv.slice(2);
const paths = files.length > 0 ? files : readdirSync(PROFILE_DIR).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(PROFILE_DIR, f));
for (const path of paths) {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfMicros = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0;
    total += delta;
    const key = where(byId.get(id)!);
    selfMicros.set(key, (selfMicros.get(key) ?? 0) + delta);
  });
  console.log(`\n${relative(repoRoot, path)}: ${(total / 1e6).toFixed(1)} s sampled`);
  const busy = total - (selfMicros.get('(idle)') ?? 0);
  if (Number.isFinite(REQUESTS)) console.log(`busy ${(busy / 1e6).toFixed(1)} s: ${(busy / REQUESTS).toFixed(1)} µs per request`);
  for (const [name, micros] of [...selfMicros].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
    const perRequest = Number.isFinite(REQUESTS) && name !== '(idle)' ? `  ${(micros / REQUESTS).toFixed(1).padStart(5)} µs` : '';
    console.log(`${((micros / total) * 100).toFixed(1).padStart(5)}%${perRequest}  ${name}`);
  }
}
