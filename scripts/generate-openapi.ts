/**
 * Writes docs/openapi.json from schemas/ (src/openapi/openapi-document.ts).
 * `--check` fails instead of writing when the checked-in document has drifted.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { openApiDocument } from '../src/openapi/openapi-document.js';

const target = resolve(import.meta.dirname, '..', 'docs', 'openapi.json');
const generated = `${JSON.stringify(openApiDocument(), null, 2)}\n`;
if (process.argv.includes('--check')) {
  const current = await readFile(target, 'utf8').catch(() => '');
  if (current !== generated) {
    console.error('docs/openapi.json is out of date with schemas/: run `npm run openapi:generate`.');
    process.exit(1);
  }
  console.log('OpenAPI document is up to date');
} else {
  await writeFile(target, generated);
  console.log(`wrote ${target}`);
}
