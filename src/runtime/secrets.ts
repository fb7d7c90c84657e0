import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Reads a secret kept in a file, creating it (0600) on first use. The embedded default
 * keeps its development signing secret and its cursor key under DATA_DIR this way, so
 * tokens and cursors survive a restart.
 */
export function loadOrCreateSecret(file: string): { secret: string; created: boolean } {
  try {
    const secret = readFileSync(file, 'utf8').trim();
    if (secret.length >= 32) return { secret, created: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dirname(file), { recursive: true });
  const secret = randomBytes(32).toString('hex');
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return { secret, created: true };
}
