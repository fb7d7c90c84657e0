/**
 * The instants the product keeps: the store's DateTime64(6, 'UTC') holds years 1900–2299,
 * and outside them ClickHouse would silently clamp the value. Shared by the store's
 * conversions (src/store/timestamps.ts) and the ingest consumer's byte validator
 * (src/schemas/byte-validator.ts), which sits below the store.
 */
export const MIN_YEAR = 1900;
export const MAX_YEAR = 2299;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!;
}

/** Whether the fields name a real UTC instant the store can hold, with no leap second: its text needs no Date to convert. */
export function isStorableUtcInstant(year: number, month: number, day: number, h: number, mi: number, s: number): boolean {
  if (year < MIN_YEAR || year > MAX_YEAR || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false;
  return h >= 0 && h <= 23 && mi >= 0 && mi <= 59 && s >= 0 && s <= 59;
}
