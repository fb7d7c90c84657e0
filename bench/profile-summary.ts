/**
 * Where a profiled process spent its CPU: self time per function, summed over every
 * .cpuprofile that BENCH_CPU_PROF=1 left in bench/results/profiles (or the files given).
 * PROFILE_BY=module sums it per package or source file instead: a flat profile, where no
 * function stands out, still shows which layer the time goes to.
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
const BY_MODULE = process.env['PROFILE_BY'] === 'module';

function where(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const file = url.startsWith('file://') ? relative(repoRoot, url.slice('file://'.length)) : url;
  if (BY_MODULE) return moduleOf(file, functionName);
  return `${functionName || '(anonymous)'} ${file === '' ? '' : `${file}:${lineNumber + 1}`}`.trim();
}

/** A dependency's package, one of our files, Node's own module, or V8's pseudo-frame (garbage collector, program). */
function moduleOf(file: string, functionName: string): string {
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  if (pkg !== null) return pkg[1]!;
  if (file === '') return functionName.startsWith('(') ? functionName : '(native)';
  return file;
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
  for (const [name, micros] of [...selfMicros].sort((a, b) => b[1] - a[1]).slice(0, TOP)) {
    console.log(`${((micros / total) * 100).toFixed(1).padStart(5)}%  ${name}`);
  }
}
