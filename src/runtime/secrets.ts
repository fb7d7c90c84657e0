import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { StartupError } from '../errors/startup-error.js';

/** What a kept secret must hold at least: 32 bytes, as AUTH_JWT_SECRET and CURSOR_SECRET must. */
const MIN_SECRET_BYTES = 32;
/** Estimated from its characters' frequencies; a generated secret (64 hex digits) has about 240. */
const MIN_SECRET_BITS = 128;

/**
 * Bits of entropy the text shows, from how often each character occurs in it: 64 × `a`
 * shows none, 64 random hex digits about 240. It cannot tell a random secret from a
 * well-mixed phrase, but it catches what a person types when a file has to say something.
 */
export function estimatedSecretBits(secret: string): number {
  const counts = new Map<string, number>();
  for (const char of secret) counts.set(char, (counts.get(char) ?? 0) + 1);
  const length = [...secret].length;
  let bitsPerChar = 0;
  for (const count of counts.values()) {
    const p = count / length;
    bitsPerChar -= p * Math.log2(p);
  }
  return bitsPerChar * length;
}

/**
 * Reads a secret kept in a file, creating it (0600) on first use. The embedded default
 * keeps its development signing secret and its cursor key under DATA_DIR this way, so
 * tokens and cursors survive a restart.
 *
 * A file that exists is used only if it is the owner's alone (no group or other bits)
 * and looks random: a world-readable signing secret lets anyone on the host mint tokens,
 * and a short or repetitive one can be guessed. Either stops the start with a
 * StartupError naming the file; the gateway never replaces a secret it did not make in
 * this call, since tokens or cursors already handed out depend on it.
 */
export function loadOrCreateSecret(file: string): { secret: string; created: boolean } {
  let text: string | undefined;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  if (text !== undefined) {
    const mode = statSync(file).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      throw new StartupError(`${file}: a secret file must be readable by its owner only (chmod 600); its mode is ${mode.toString(8).padStart(3, '0')}`);
    }
    const secret = text.trim();
    if (Buffer.byteLength(secret) < MIN_SECRET_BYTES || estimatedSecretBits(secret) < MIN_SECRET_BITS) {
      throw new StartupError(`${file}: the secret is too weak (at least ${MIN_SECRET_BYTES} random bytes); remove the file to have a new one generated`);
    }
    return { secret, created: false };
  }
  mkdirSync(dirname(file), { recursive: true });
  const secret = randomBytes(32).toString('hex');
  writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  return { secret, created: true };
}
