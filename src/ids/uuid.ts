/**
 * A UUID as the API takes one and the store gives one back: the 36-character hyphenated
 * form (8-4-4-4-12 hex digits), in either case. One pattern for every place that checks
 * an id (request validation, the ORG-ID header, feed cursors, live-tail positions), so a
 * spelling one of them accepts is never refused by another.
 */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(text: string): boolean {
  return UUID_PATTERN.test(text);
}

/** The nil UUID (RFC 9562), the smallest of all: (t, NIL_UUID) sorts before every event ingested at t. */
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';
