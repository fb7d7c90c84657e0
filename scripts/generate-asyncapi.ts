/**
 * Writes docs/asyncapi.json from schemas/ (src/asyncapi/asyncapi-document.ts).
 * `--check` fails instead of writing when the checked-in document has drifted.
 */
import { resolve } from 'node:path';
import { asyncApiDocument } from '../src/asyncapi/asyncapi-document.js';
import { writeOrCheck } from './generated-file.js';

const target = resolve(import.meta.dirname, '..', 'docs', 'asyncapi.json');
await writeOrCheck(target, `${JSON.stringify(asyncApiDocument(), null, 2)}\n`, 'npm run asyncapi:generate');
