import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from '../../errors/app-error.js';
import { isUuid } from '../../ids/uuid.js';
import type { FeedFilters, FeedPosition } from '../../store/event-store.js';
import { isStoreTimestamp } from '../../store/timestamps.js';

/** What a cursor is valid for: the organization, the project and the exact filters of the query that issued it. */
export interface CursorScope {
  readonly orgId: string;
  readonly projectId: string;
  readonly filters: FeedFilters;
}

export interface CursorCodec {
  encode(position: FeedPosition, scope: CursorScope): string;
  /** Throws AppError INVALID_CURSOR when the token was altered or belongs to another query. */
  decode(token: string, scope: CursorScope): FeedPosition;
}

const VERSION = 'v1';
const MAC_BYTES = 16;

function scopeText(scope: CursorScope): string {
  const f = scope.filters;
  // A fixed field order, so equal scopes always give equal text. The time bounds come
  // last and only when set, so cursors issued before they existed still verify.
  const bounds = f.since === undefined && f.until === undefined ? [] : [f.since ?? null, f.until ?? null];
  return JSON.stringify([scope.orgId, scope.projectId, f.domain ?? null, f.entity ?? null, f.action ?? null, f.deviceId ?? null, f.fleetId ?? null, ...bounds]);
}

function invalid(): AppError {
  return new AppError('INVALID_CURSOR', 'Invalid cursor', {
    detail: 'The cursor is not valid for this query; start again without a cursor.',
    fields: { 'query.cursor': 'is not valid for this project and these filters' },
  });
}

/**
 * The cursor is the position of the last item of a page, readable but MAC'd: the MAC
 * covers the position and the query's scope, so an altered cursor, or one replayed
 * against another project, organization or filter set, fails verification. The scope
 * itself is not in the token; it is recomputed from the request.
 */
export function createCursorCodec(key: Buffer): CursorCodec {
  if (key.length < 32) throw new Error('cursor key must be at least 32 bytes');

  function mac(body: string, scope: CursorScope): Buffer {
    return createHmac('sha256', key).update(`${VERSION}\n${body}\n${scopeText(scope)}`).digest().subarray(0, MAC_BYTES);
  }

  return {
    encode(position, scope) {
      const body = Buffer.from(`${position.occurredAt}|${position.id}`).toString('base64url');
      return `${VERSION}.${body}.${mac(body, scope).toString('base64url')}`;
    },
    decode(token, scope) {
      const parts = token.split('.');
      if (parts.length !== 3 || parts[0] !== VERSION) throw invalid();
      const [, body, tag] = parts as [string, string, string];
      const given = Buffer.from(tag, 'base64url');
      // Node's decoder skips characters outside the alphabet and ignores the spare low bits
      // of the last one, so several spellings decode to the same MAC; only the one we issue is valid.
      if (given.toString('base64url') !== tag) throw invalid();
      const expected = mac(body, scope);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
      const [occurredAt, id, ...rest] = Buffer.from(body, 'base64url').toString().split('|');
      if (rest.length > 0 || occurredAt === undefined || id === undefined || !isStoreTimestamp(occurredAt) || !isUuid(id)) {
        throw invalid();
      }
      return { occurredAt, id };
    },
  };
}
