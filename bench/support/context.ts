import { randomBytes } from 'node:crypto';
import { permissions } from '../../src/auth/principal.js';
import { signHs256Token } from '../../src/auth/sign-token.js';
import type { Ceiling } from '../scenarios/ceiling.js';

/** What every scenario is given: the run's settings, the shared servers and the HTTP ceiling. */
export interface BenchContext {
  readonly seconds: number;
  readonly brokers: readonly string[];
  readonly clickhouseUrl: string;
  /** Distinct per run, so topics, groups and databases of earlier runs never mix in. */
  readonly run: string;
  readonly secret: string;
  /** Bare Koa in the same run, under each load generator. */
  readonly ceiling: Ceiling;
}

/** Headers of a caller of one organization with every permission. */
export async function callerHeaders(secret: string, orgId: string): Promise<Record<string, string>> {
  const token = await signHs256Token(secret, { sub: 'bench', orgIds: [orgId], scopes: permissions, ttlSeconds: 4 * 3600 });
  return { authorization: `Bearer ${token}`, 'org-id': orgId, 'content-type': 'application/json' };
}

export const newSecret = () => randomBytes(32).toString('hex');
