/**
 * Writes BENCHMARKS.md's results section from the result files in bench/results/
 * (bench/support/results-document.ts); the rest of the document is written by hand.
 * `--check` fails instead of writing when the checked-in section has drifted.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { readResultFiles, withResults } from '../bench/support/results-document.js';
import { writeOrCheck } from './generated-file.js';

const target = resolve(import.meta.dirname, '..', 'BENCHMARKS.md');
await writeOrCheck(target, withResults(await readFile(target, 'utf8'), readResultFiles()), 'npm run bench:table', 'bench/results/');
