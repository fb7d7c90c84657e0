/**
 * Writes docs/openapi.json from schemas/ (src/openapi/openapi-document.ts).
 * `--check` fails instead of writing when the checked-in document has drifted.
 */
import { resolve } from 'node:path';
import { openApiDocument } from '../src/openapi/openapi-document.js';
import { writeOrCheck } from './generated-file.js';

const target = resolve(import.meta.dirname, '..', 'docs', 'openapi.json');
await writeOrCheck(target, `${JSON.stringify(openApiDocument(), null, 2)}\n`, 'npm run openapi:generate');
