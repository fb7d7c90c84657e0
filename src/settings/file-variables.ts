import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { optional, type Env } from './env.js';
import { ConfigError } from './config-error.js';

/**
 * Files that configuration variables name are read once, at start, like the variables
 * themselves: a missing or unreadable file stops the process with the variable's name and
 * the path. Errors never quote what a file holds.
 */
function readNamedFile(name: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : (code ?? 'unreadable');
    throw new ConfigError(name, `cannot read ${path}: ${why}`);
  }
}

/** The text of the file the variable names, or undefined when it is unset. */
export function fileVariable(env: Env, name: string): string | undefined {
  const path = optional(env, name);
  return path === undefined ? undefined : readNamedFile(name, path);
}

/**
 * A secret given as NAME, or as NAME_FILE: a file holding it, as orchestrators mount
 * secrets, so that it stays out of the process's environment listing. Setting both is an
 * error. The file's trailing line break is not part of the secret.
 */
export function secretVariable(env: Env, name: string): string | undefined {
  const fileName = `${name}_FILE`;
  const direct = optional(env, name);
  const path = optional(env, fileName);
  if (direct !== undefined && path !== undefined) throw new ConfigError(`${name}, ${fileName}`, 'set only one of them');
  if (path === undefined) return direct;
  const value = readNamedFile(fileName, path).replace(/[\r\n]+$/, '');
  if (value === '') throw new ConfigError(fileName, `${path} is empty`);
  return value;
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** A PEM file of one or more certificates (a CA bundle, or a certificate and its chain), checked to parse. */
export function certificatesFile(env: Env, name: string): { readonly pem: string; readonly first: X509Certificate } | undefined {
  const pem = fileVariable(env, name);
  if (pem === undefined) return undefined;
  const path = optional(env, name);
  const blocks = pem.match(CERTIFICATE_BLOCK) ?? [];
  if (blocks.length === 0) throw new ConfigError(name, `${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  const certificates = blocks.map((block) => {
    try {
      return new X509Certificate(block);
    } catch {
      throw new ConfigError(name, `${path} holds a certificate that cannot be parsed`);
    }
  });
  return { pem, first: certificates[0]! };
}

/** An unencrypted PEM private key. */
export function privateKeyFile(env: Env, name: string): { readonly pem: string; readonly key: KeyObject } | undefined {
  const pem = fileVariable(env, name);
  if (pem === undefined) return undefined;
  const path = optional(env, name);
  try {
    return { pem, key: createPrivateKey(pem) };
  } catch {
    const why = /ENCRYPTED/.test(pem) ? 'holds an encrypted key; give it unencrypted (protect the file instead)' : 'holds no PEM private key';
    throw new ConfigError(name, `${path} ${why}`);
  }
}
