import { AppError } from '../errors/app-error.js';
import { catalogue, type CommandPermission } from '../commands/catalogue.js';
import { isUuid } from '../ids/uuid.js';

/** Reading the feed, and each command's own (src/commands/catalogue.ts). */
export type Permission = 'events:read' | CommandPermission;
export const permissions: readonly Permission[] = ['events:read', ...catalogue.map((entry) => entry.permission)];

/** The verified caller: who they are, which organizations they may act for, what they may do. */
export interface Principal {
  readonly subject: string;
  readonly orgIds: ReadonlySet<string>;
  readonly scopes: ReadonlySet<string>;
}

function malformed(claim: string): AppError {
  return new AppError('UNAUTHENTICATED', 'Unauthorized', { detail: `Bearer token has a malformed "${claim}" claim.` });
}

function orgIdsOf(claims: Readonly<Record<string, unknown>>): Set<string> {
  const ids = new Set<string>();
  const many = claims['org_ids'];
  const one = claims['org_id'];
  if (many !== undefined) {
    if (!Array.isArray(many) || !many.every((v): v is string => typeof v === 'string')) throw malformed('org_ids');
    for (const id of many) ids.add(id.toLowerCase());
  }
  if (one !== undefined) {
    if (typeof one !== 'string') throw malformed('org_id');
    ids.add(one.toLowerCase());
  }
  return ids;
}

function scopesOf(claims: Readonly<Record<string, unknown>>): Set<string> {
  const scopes = new Set<string>();
  const scope = claims['scope'];
  const scp = claims['scp'];
  if (scope !== undefined) {
    if (typeof scope !== 'string') throw malformed('scope');
    for (const s of scope.split(' ')) if (s !== '') scopes.add(s);
  }
  if (scp !== undefined) {
    if (!Array.isArray(scp) || !scp.every((v): v is string => typeof v === 'string')) throw malformed('scp');
    for (const s of scp) scopes.add(s);
  }
  return scopes;
}

/** Reads the claims of a token whose signature and time claims were already verified. */
export function principalFromClaims(claims: Readonly<Record<string, unknown>>): Principal {
  const sub = claims['sub'];
  if (typeof sub !== 'string' || sub === '') {
    throw new AppError('UNAUTHENTICATED', 'Unauthorized', { detail: 'Bearer token has no "sub" claim.' });
  }
  return { subject: sub, orgIds: orgIdsOf(claims), scopes: scopesOf(claims) };
}

/** Parses the ORG-ID header: a missing or malformed one is a 401, like a missing token. */
export function parseOrgIdHeader(value: string | string[] | undefined): string {
  if (value === undefined || value === '') {
    throw new AppError('UNAUTHENTICATED', 'Unauthorized', { detail: 'The ORG-ID header is required.' });
  }
  if (Array.isArray(value) || !isUuid(value.trim())) {
    throw new AppError('UNAUTHENTICATED', 'Unauthorized', { detail: 'The ORG-ID header must be one organization uuid.' });
  }
  return value.trim().toLowerCase();
}

/** 403 unless the caller may act for the organization and holds the permission. */
export function authorize(principal: Principal, orgId: string, permission: Permission): void {
  if (!principal.orgIds.has(orgId)) {
    throw new AppError('FORBIDDEN', 'Forbidden', { detail: 'The token does not grant access to this organization.' });
  }
  if (!principal.scopes.has(permission)) {
    throw new AppError('FORBIDDEN', 'Forbidden', { detail: `The token lacks the "${permission}" permission.` });
  }
}
