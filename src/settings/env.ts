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

/** A whole number in [min, max], or undefined when the variable is unset. */
export function optionalInteger(env: Env, name: string, min: number, max: number): number | undefined {
  const raw = optional(env, name);
  if (raw === undefined) return undefined;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

/** A whole number in [min, max], or `fallback` when the variable is unset. */
export function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  return optionalInteger(env, name, min, max) ?? fallback;
}

/** One of `choices`, or `fallback` when the variable is unset. */
export function oneOf<T extends string>(env: Env, name: string, choices: readonly T[], fallback: T): T {
  const raw = optional(env, name);
  if (raw === undefined) return fallback;
  if (!(choices as readonly string[]).includes(raw)) throw new ConfigError(name, `must be one of ${choices.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** Comma-separated entries, trimmed, none empty; undefined when the variable is unset. */
export function list(env: Env, name: string): string[] | undefined {
  const raw = optional(env, name);
  if (raw === undefined) return undefined;
  const items = raw.split(',').map((s) => s.trim());
  if (items.some((s) => s === '')) throw new ConfigError(name, `has an empty entry in "${raw}"`);
  return items;
}

/**
 * `raw`, the value of `name` (or, with `item`, that item of its list), as an http(s) URL,
 * or the line that stops the process. The value itself is not in the line: a URL may hold
 * a password.
 */
export function httpUrl(name: string, raw: string, item?: string): URL {
  const which = item === undefined ? '' : `item ${item} `;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, `${which}is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new ConfigError(name, `${which}must be an http:// or https:// URL`);
  return url;
}
