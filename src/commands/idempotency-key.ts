import { validationError } from '../schemas/schema-registry.js';

/** Printable ASCII, as the IETF Idempotency-Key draft suggests; long enough for a UUID or a hash. */
export const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The request's Idempotency-Key header, if it sent one; a malformed one is a 400. */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (typeof header !== 'string' || !IDEMPOTENCY_KEY.test(header)) {
    throw validationError({ 'header.idempotency-key': 'must be 1 to 255 printable ASCII characters' });
  }
  return header;
}
