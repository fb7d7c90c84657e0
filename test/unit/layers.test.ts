import { expect } from 'chai';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The layers of src/, top first (docs/decisions/layers.md). A file may import files of
 * its own module and of modules in lower layers, never of a module in its own layer or
 * above. A module is a folder under src/ (a subfolder named here is a module of its
 * own; a file belongs to the longest one that holds it); '.' is the files at src/'s root.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['.'],
  // The operator's dead-letter and erasure commands: processes of their own, beside the gateway's entry.
  ['dead-letters', 'erasure'],
  ['runtime'],
  ['config'],
  ['openapi', 'asyncapi'],
  ['http'],
  ['auth', 'feed/pages'],
  ['feed/first-page-cache'],
  ['feed/tail'],
  ['feed'],
  ['ingest'],
  ['store'],
  ['commands'],
  ['kafka'],
  ['schemas'],
  ['errors', 'observability', 'concurrency', 'metrics', 'json', 'ids', 'time', 'settings', 'generated'],
];

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** What a source text imports: static, type-only, re-exported and dynamic, read by the TypeScript compiler's own scanner. */
function specifiersOf(text: string): string[] {
  return ts.preProcessFile(text, true, true).importedFiles.map(({ fileName }) => fileName);
}

/** The files under src/ this one imports. */
function importsOf(file: string): string[] {
  return specifiersOf(readFileSync(file, 'utf8'))
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => {
      const target = resolve(dirname(file), specifier);
      const asTs = target.replace(/\.js$/, '.ts');
      return existsSync(asTs) ? asTs : target;
    })
    .filter((target) => target.startsWith(SRC + sep));
}

const MODULES = LAYERS.flat();

/** The longest declared module holding the file, or undefined when no layer names its folder. */
function moduleOf(file: string): string | undefined {
  const folder = dirname(relative(SRC, file)).split(sep).join('/');
  return MODULES.filter((module) => module === '.' || folder === module || folder.startsWith(`${module}/`)).sort((a, b) => b.length - a.length)[0];
}

const rank = (module: string) => LAYERS.length - LAYERS.findIndex((layer) => layer.includes(module));

/** Strongly connected components of more than one file (or a file importing itself): Tarjan's algorithm. */
function loops(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** Imports from a module to one in its own layer or above, as "from (module) -> to (module)"; paths relative to src/. */
function upwardImports(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const upward: string[] = [];
  for (const [file, targets] of graph) {
    const from = moduleOf(file);
    if (from === undefined) continue;
    for (const target of targets) {
      const to = moduleOf(target);
      if (to === undefined || to === from) continue;
      if (rank(to) >= rank(from)) upward.push(`src/${name(file)} (${from}) -> src/${name(target)} (${to})`);
    }
  }
  return upward;
}

const name = (file: string) => relative(SRC, file).split(sep).join('/');

describe('layers', () => {
  const files = sourceFiles(SRC);
  const graph = new Map(files.map((file) => [file, importsOf(file)]));

  it('places every folder of src/ in a layer', () => {
    const unplaced = files.filter((file) => moduleOf(file) === undefined).map(name);
    expect(unplaced, 'folders no layer names: add them to LAYERS and to docs/decisions/layers.md').to.deep.equal([]);
  });

  it('has no import from a module to one in its own layer or above', () => {
    expect(upwardImports(graph)).to.deep.equal([]);
  });

  it('has no import loop, type-only imports included', () => {
    expect(loops(graph).map((component) => component.map(name).join(' <-> '))).to.deep.equal([]);
  });

  describe('the checks themselves', () => {
    const at = (path: string) => join(SRC, path);

    it('report an import upward, one within a layer, and none downward or within a module', () => {
      const sample = new Map([
        [at('kafka/kafka-client.ts'), [at('config/config.ts'), at('errors/app-error.ts'), at('kafka/kafka-errors.ts')]],
        [at('openapi/openapi-document.ts'), [at('asyncapi/asyncapi-document.ts')]],
        [at('feed/tail/live-tail.ts'), [at('feed/pages/cursor.ts'), at('feed/stored-batches.ts')]],
      ]);
      expect(upwardImports(sample)).to.deep.equal([
        'src/kafka/kafka-client.ts (kafka) -> src/config/config.ts (config)',
        'src/openapi/openapi-document.ts (openapi) -> src/asyncapi/asyncapi-document.ts (asyncapi)',
        'src/feed/tail/live-tail.ts (feed/tail) -> src/feed/pages/cursor.ts (feed/pages)',
      ]);
    });

    it('report a loop of two files, and of one file importing itself', () => {
      const sample = new Map([
        [at('http/a.ts'), [at('http/b.ts')]],
        [at('http/b.ts'), [at('http/a.ts'), at('http/c.ts')]],
        [at('http/c.ts'), [at('http/c.ts')]],
        [at('http/d.ts'), [at('http/a.ts')]],
      ]);
      expect(loops(sample).map((component) => component.map(name).join(' <-> '))).to.have.members(['http/a.ts <-> http/b.ts', 'http/c.ts']);
    });

    it('read type-only, re-exported and dynamic imports as imports', () => {
      const text = ["import type { A } from './a.js';", "export { B } from './b.js';", "export type { C } from './c.js';", "const d = await import('./d.js');"].join('\n');
      expect(specifiersOf(text)).to.deep.equal(['./a.js', './b.js', './c.js', './d.js']);
      expect(importsOf(at('http/state.ts'))).to.include(at('http/auth-guard.ts'));
    });
  });
});
