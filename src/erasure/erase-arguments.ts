import { parseArgs } from 'node:util';
import { isUuid } from '../ids/uuid.js';
import type { EraseRequest } from '../store/erasure-run.js';

/** A command line the tool cannot run; main prints its message with the usage and exits 2. */
export class EraseUsageError extends Error {
  override readonly name = 'EraseUsageError';
}

export type EraseCommand = { readonly kind: 'help' } | ({ readonly kind: 'erase' } & EraseRequest);

export const ERASE_USAGE = `usage: npm run erase -- --org ID [--project ID] [--device ID] --requested-by WHO [--reason TEXT]
Erases every stored event of the organization, or of one project, or of one device (in one
project with --project, in every project of the organization without), and drops the scope's
events arriving for ERASURE_SUPPRESS_DAYS (docs/operations.md, "Erasure"). Running it again
for the same scope resumes an unfinished erasure, reports a finished one, and erases the
scope again, as a new audited erasure, if it holds events again (written after the last
erasure's suppression ended).
  --requested-by WHO   who asked (a person, a ticket): kept in the audit record
  --reason TEXT        why (a request's reference, "account closed")
The store comes from the gateway's variables (CLICKHOUSE_*, DATA_DIR; stop an embedded
gateway first: its data directory belongs to one process).`;

const OPTIONS = {
  org: { type: 'string' },
  project: { type: 'string' },
  device: { type: 'string' },
  'requested-by': { type: 'string' },
  reason: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function uuid(option: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!isUuid(value)) throw new EraseUsageError(`--${option}: "${value}" is not a UUID`);
  return value.toLowerCase();
}

/** The command line after `erase`, checked whole before anything connects. */
export function parseEraseArguments(args: readonly string[]): EraseCommand {
  let values;
  try {
    ({ values } = parseArgs({ args: [...args], options: OPTIONS, allowPositionals: false, strict: true }));
  } catch (error) {
    throw new EraseUsageError((error as Error).message);
  }
  if (values.help === true) return { kind: 'help' };
  const orgId = uuid('org', values.org);
  if (orgId === undefined) throw new EraseUsageError('--org is required: an erasure is always of one organization, or of a part of it');
  const requestedBy = values['requested-by']?.trim() ?? '';
  if (requestedBy === '') throw new EraseUsageError('--requested-by is required: the audit record says who asked');
  if (requestedBy.length > 200) throw new EraseUsageError('--requested-by: at most 200 characters');
  const reason = values.reason?.trim() ?? '';
  if (reason.length > 1000) throw new EraseUsageError('--reason: at most 1,000 characters');
  return {
    kind: 'erase',
    scope: { orgId, projectId: uuid('project', values.project), deviceId: uuid('device', values.device) },
    requestedBy,
    reason,
  };
}
