/**
 * Confluent's wire format puts a magic byte 0 and a 4-byte schema id before the payload.
 * A producer configured with a schema-registry serializer sends it; our consumer reads the
 * payload alone, so such messages are refused as invalid JSON.
 */
const PREFIX_BYTES = 5;

/** Whether `value` starts with the wire-format prefix and has something after it. */
export function hasConfluentPrefix(value: Buffer): boolean {
  return value.length > PREFIX_BYTES && value[0] === 0;
}

/** `value` without the wire-format prefix, or `value` itself when it has none. */
export function stripConfluentPrefix(value: Buffer): Buffer {
  return hasConfluentPrefix(value) ? value.subarray(PREFIX_BYTES) : value;
}
