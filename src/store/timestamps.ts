/**
 * Events carry RFC 3339 timestamps with any offset and precision; the store keeps
 * DateTime64(6, 'UTC'). JavaScript's Date holds only milliseconds, so the conversion is
 * done on the text to keep microseconds exact. DateTime64's range is in
 * src/time/storable-instant.ts.
 */
import { MAX_YEAR, MIN_YEAR, isStorableUtcInstant } from '../time/storable-instant.js';

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})$/;
const STORE_FORMAT = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})\.(\d{6})$/;

export class TimestampError extends Error {
  override readonly name = 'TimestampError';
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** A fraction of a second as DateTime64(6) keeps it: cut or padded to microseconds. */
function sixDigits(fraction: string): string {
  return fraction.padEnd(6, '0').slice(0, 6);
}

/**
 * Whether the text is already the UTC instant it names: zone Z and every field in range.
 * Then the stored text is a change of separators and no Date is built; the ingest
 * consumer converts every event's timestamp, and the Date path was 5% of its CPU.
 * Anything else (an offset, a leap second, a day that rolls over) goes through Date.
 */
function isPlainUtc(zone: string, year: number, month: number, day: number, h: number, mi: number, s: number): boolean {
  return (zone === 'Z' || zone === 'z') && isStorableUtcInstant(year, month, day, h, mi, s);
}

/**
 * The instant of the fields as written. Date.UTC reads years 0–99 as 1900–1999, so
 * `0001-01-01` would become 1901 and pass the range check; setUTCFullYear takes the year
 * as it is. A leap second (:60) is folded into the next second, as Date.UTC does.
 */
function utcEpochMs(year: number, month: number, day: number, h: number, mi: number, s: number): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(h, mi, s, 0);
  return date.getTime();
}

/** RFC 3339 text → 'YYYY-MM-DD hh:mm:ss.ffffff' in UTC, as DateTime64(6, 'UTC') takes it. */
export function toStoreTimestamp(rfc3339: string): string {
  const m = RFC3339.exec(rfc3339);
  if (m === null) throw new TimestampError(`"${rfc3339}" is not an RFC 3339 date-time`);
  const [, y, mo, d, h, mi, s, fraction = '', zone] = m as unknown as string[];
  const micros = sixDigits(fraction);
  if (isPlainUtc(zone!, Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s))) {
    return `${y}-${mo}-${d} ${h}:${mi}:${s}.${micros}`;
  }
  let offsetMinutes = 0;
  if (zone !== 'Z' && zone !== 'z') {
    const sign = zone!.startsWith('-') ? -1 : 1;
    offsetMinutes = sign * (Number(zone!.slice(1, 3)) * 60 + Number(zone!.slice(4, 6)));
  }
  const epochMs = utcEpochMs(Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s)) - offsetMinutes * 60_000;
  const utc = new Date(epochMs);
  const year = utc.getUTCFullYear();
  if (Number.isNaN(epochMs) || year < MIN_YEAR || year > MAX_YEAR) {
    throw new TimestampError(`"${rfc3339}" is outside ${MIN_YEAR}..${MAX_YEAR}`);
  }
  return (
    `${pad(year, 4)}-${pad(utc.getUTCMonth() + 1, 2)}-${pad(utc.getUTCDate(), 2)} ` +
    `${pad(utc.getUTCHours(), 2)}:${pad(utc.getUTCMinutes(), 2)}:${pad(utc.getUTCSeconds(), 2)}.${micros}`
  );
}

/**
 * The stored text of `YYYY-MM-DDThh:mm:ss[.fraction]Z` whose fields are known to be in
 * range (1900–2299, no leap second): what toStoreTimestamp gives for it, without a
 * pattern match. For readers that checked the text already (src/schemas/byte-validator.ts).
 */
export function plainUtcToStore(at: string): string {
  return `${at.slice(0, 10)} ${at.slice(11, 19)}.${sixDigits(at.slice(20, -1))}`;
}

/** 'YYYY-MM-DD hh:mm:ss.ffffff' (UTC) → 'YYYY-MM-DDThh:mm:ss.ffffffZ'. */
export function fromStoreTimestamp(stored: string): string {
  const m = STORE_FORMAT.exec(stored);
  if (m === null) throw new TimestampError(`"${stored}" is not a stored DateTime64(6) value`);
  return `${m[1]}T${m[2]}.${m[3]}Z`;
}

export function isStoreTimestamp(value: string): boolean {
  return STORE_FORMAT.test(value);
}

/** Microseconds since the epoch of stored text: exact, since DateTime64(6)'s range stays below 2^53 µs. */
export function storeTextMicros(stored: string): number {
  return Date.parse(`${stored.slice(0, 10)}T${stored.slice(11, 19)}Z`) * 1000 + Number(stored.slice(20, 26));
}

/** Stored text of microseconds since the epoch. */
export function microsStoreText(micros: number): string {
  const seconds = Math.floor(micros / 1_000_000);
  return `${new Date(seconds * 1000).toISOString().slice(0, 19).replace('T', ' ')}.${pad(micros - seconds * 1_000_000, 6)}`;
}
