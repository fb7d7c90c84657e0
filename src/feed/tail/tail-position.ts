import { isUuid } from '../../ids/uuid.js';
import type { TailPosition } from '../../store/event-store.js';

/**
 * The SSE `id:` of a live-tail message, sent back as Last-Event-ID to resume: a version
 * byte, ingested_at in milliseconds since the epoch (int64, big-endian) and the event id's
 * 16 bytes, in base64url. Fixed length, so anything else is refused before decoding.
 * It carries no MAC: a position only says where in its own project's ingestion order a
 * caller resumes, and the caller may read all of that project anyway.
 */
const VERSION = 1;
const BYTES = 1 + 8 + 16;
const TOKEN = /^[A-Za-z0-9_-]{34}$/;
const STORE_MILLIS = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{3})$/;

// DateTime64's range, as for occurred_at (src/store/timestamps.ts).
const MIN_MS = Date.UTC(1900, 0, 1);
const MAX_MS = Date.UTC(2300, 0, 1) - 1;

function millisOf(text: string): number {
  const m = STORE_MILLIS.exec(text);
  if (m === null) throw new Error(`"${text}" is not a DateTime64(3) value`);
  const [y, mo, d, h, mi, s, ms] = m.slice(1).map(Number) as [number, number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, s, ms);
}

function textOf(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
}

export function encodeTailPosition(position: TailPosition): string {
  if (!isUuid(position.id)) throw new Error(`"${position.id}" is not a uuid`);
  const hex = position.id.replace(/-/g, '');
  const bytes = Buffer.alloc(BYTES);
  bytes.writeUInt8(VERSION, 0);
  bytes.writeBigInt64BE(BigInt(millisOf(position.ingestedAt)), 1);
  Buffer.from(hex, 'hex').copy(bytes, 9);
  return bytes.toString('base64url');
}

/** The position a token names, or undefined when it is not a token this gateway issues. */
export function decodeTailPosition(token: string): TailPosition | undefined {
  if (!TOKEN.test(token)) return undefined;
  const bytes = Buffer.from(token, 'base64url');
  // Node's decoder ignores stray bits; only the canonical spelling of the bytes is accepted.
  if (bytes.length !== BYTES || bytes.toString('base64url') !== token || bytes.readUInt8(0) !== VERSION) return undefined;
  const ms = Number(bytes.readBigInt64BE(1));
  if (ms < MIN_MS || ms > MAX_MS) return undefined;
  const hex = bytes.subarray(9).toString('hex');
  const id = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  return { ingestedAt: textOf(ms), id };
}
