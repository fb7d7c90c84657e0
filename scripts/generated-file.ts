import { readFile, writeFile } from 'node:fs/promises';
import { relative, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');

/**
 * Writes a generated file, or, with --check on the command line, fails when the
 * checked-in copy differs from what would be generated (npm test runs the check).
 * `source` names what it is generated from, for the message.
 */
export async function writeOrCheck(target: string, generated: string, regenerate: string, source = 'schemas/'): Promise<void> {
  const name = relative(root, target);
  if (!process.argv.includes('--check')) {
    await writeFile(target, generated);
    console.log(`wrote ${name}`);
    return;
  }
  const current = await readFile(target, 'utf8').catch(() => '');
  if (current !== generated) {
    console.error(`${name} is out of date with ${source}: run \`${regenerate}\`.`);
    process.exit(1);
  }
  console.log(`${name} is up to date`);
}
