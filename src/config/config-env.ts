import { ConfigError } from './config-error.js';

/** The process environment as configuration reads it. */
export type Env = Readonly<Record<string, string | undefined>>;

/** A variable's value, trimmed; unset and empty are the same. */
export function optional(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === undefined || value === '' ? undefined : value;
}

/** true or false, nothing looser: a typo must not silently pick a side. */
export function flag(env: Env, name: string, fallback: boolean): boolean {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new ConfigError(name, `must be true or false, got "${raw}"`);
}

/** The names among `names` that are set, for "only with" and "only one of" checks. */
export function setAmong(env: Env, names: readonly string[]): string[] {
  return names.filter((name) => optional(env, name) !== undefined);
}
