import type { IHeaders } from 'kafkajs';

/**
 * A consumed message's headers, one value each: the first that is bytes or text.
 *
 * kafkajs gathers a repeated header into an array, and it tests for a repeat with a plain
 * property read: a header named like a member of Object.prototype (`toString`, say) comes
 * out as [the inherited function, the value]. Taking the first element blindly sent that
 * function on to the dead-letter producer, whose send then failed for ever and stalled the
 * partition (found by the ingest fuzz test). The object is built with Object.fromEntries,
 * so that a header named `__proto__` stays a header and sets no prototype.
 */
export function firstHeaderValues(headers: IHeaders | undefined): Record<string, Buffer | string> {
  const entries: [string, Buffer | string][] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    const values: unknown[] = Array.isArray(value) ? value : [value];
    const first = values.find((v): v is Buffer | string => typeof v === 'string' || Buffer.isBuffer(v));
    if (first !== undefined) entries.push([name, first]);
  }
  return Object.fromEntries(entries);
}
