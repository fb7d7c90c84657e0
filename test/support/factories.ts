import { randomUUID } from 'node:crypto';
import { permissions } from '../../src/auth/principal.js';
import { signHs256Token } from '../../src/auth/sign-token.js';
import type { CommandEntry } from '../../src/commands/command-entry.js';
import type { CanonicalEvent, EdgePolicyCommand, EnrollmentCommand } from '../../src/generated/schema-types.js';
import { schemasById } from '../../src/schemas/schema-files.js';

export const uuid = (): string => randomUUID();

/** Every permission the gateway checks: the feed's and each catalogue entry's (src/auth/principal.ts). */
export const ALL_SCOPES = permissions;

/** A schema-valid canonical event; override any field. */
export function canonicalEvent(overrides: Partial<CanonicalEvent> = {}): CanonicalEvent {
  return {
    id: uuid(),
    org_id: uuid(),
    project_id: uuid(),
    domain: 'telemetry',
    entity: 'reading',
    action: 'recorded',
    occurred_at: new Date().toISOString(),
    correlation_id: null,
    device_id: uuid(),
    fleet_id: uuid(),
    payload: { temperature: 21.5 },
    source_service: 'sensor-hub',
    span_id: null,
    trace_id: null,
    ...overrides,
  };
}

/** A schema-valid enrollment command as the gateway writes it; override any field. */
export function enrollmentCommand(overrides: Partial<EnrollmentCommand> = {}): EnrollmentCommand {
  return {
    command_id: uuid(),
    type: 'device.enroll',
    schema_version: 1,
    org_id: uuid(),
    project_id: uuid(),
    fleet_id: uuid(),
    device_id: uuid(),
    body: { display_name: 'Pump 7', enrollment_type: 'factory' },
    requested_at: '2026-05-01T10:00:00.123Z',
    requested_by: 'operator-1',
    ...overrides,
  };
}

/** A schema-valid edge-policy command as the gateway writes it; override any field. */
export function edgePolicyCommand(overrides: Partial<EdgePolicyCommand> = {}): EdgePolicyCommand {
  return {
    command_id: uuid(),
    type: 'edge-policy.merge-patch',
    schema_version: 1,
    org_id: uuid(),
    project_id: uuid(),
    fleet_id: uuid(),
    patch: { sync: { every_s: 60 }, drop: null },
    requested_at: '2026-05-01T10:00:00.123Z',
    requested_by: 'operator-1',
    ...overrides,
  };
}

/** `count` events one second apart, newest last, starting at `start`. */
export function eventSeries(count: number, base: Partial<CanonicalEvent>, start = Date.parse('2026-01-01T00:00:00Z')): CanonicalEvent[] {
  return Array.from({ length: count }, (_, i) =>
    canonicalEvent({ ...base, occurred_at: new Date(start + i * 1000).toISOString() }),
  );
}

export interface TokenOptions {
  readonly orgIds?: readonly string[];
  readonly scopes?: readonly string[];
  readonly sub?: string;
  readonly issuer?: string;
  readonly audience?: string;
  readonly ttlSeconds?: number;
}

export function hs256Token(secret: string, options: TokenOptions = {}): Promise<string> {
  return signHs256Token(secret, {
    sub: options.sub ?? 'test-user',
    orgIds: options.orgIds ?? [],
    scopes: options.scopes ?? ALL_SCOPES,
    ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
    ...(options.audience === undefined ? {} : { audience: options.audience }),
    ...(options.ttlSeconds === undefined ? {} : { ttlSeconds: options.ttlSeconds }),
  });
}

/** RFC 3339 text of `iso` moved by `micros` microseconds (either way), at microsecond precision. */
export const microsFrom = (iso: string, micros = 0) => {
  const total = Date.parse(iso) * 1000 + micros;
  const ms = Math.floor(total / 1000);
  return `${new Date(ms).toISOString().slice(0, 19)}.${String(total - Math.floor(ms / 1000) * 1_000_000).padStart(6, '0')}Z`;
};

/** `{"a":{"a":…{}}}`, `depth` levels of objects in all. */
export const objectsNested = (depth: number): Record<string, unknown> => (depth <= 1 ? {} : { a: objectsNested(depth - 1) });

/** A JSON Schema as far as deepestCommandBody reads one. */
interface SchemaNode {
  readonly $ref?: string;
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly additionalProperties?: boolean | SchemaNode;
  readonly [keyword: string]: unknown;
}

/** An object nested `depth` levels that `schema` takes, through the first member that can hold one; undefined when none can. */
function nestedIn(node: SchemaNode, depth: number): Record<string, unknown> | undefined {
  const schema: SchemaNode = node.$ref === undefined ? node : (schemasById as Record<string, SchemaNode>)[node.$ref]!;
  const types = schema.type === undefined ? ['object'] : [schema.type].flat();
  if (!types.includes('object')) return undefined;
  if (depth <= 1) return {};
  const free = schema.additionalProperties;
  if (free === undefined || free === true) return { a: objectsNested(depth - 1) };
  if (typeof free === 'object') {
    const inner = nestedIn(free, depth - 1);
    if (inner !== undefined) return { a: inner };
  }
  for (const [name, member] of Object.entries(schema.properties ?? {})) {
    const inner = nestedIn(member, depth - 1);
    if (inner !== undefined) return { [name]: inner };
  }
  return undefined;
}

/**
 * The deepest body an entry's request schema takes, nested `depth` levels: its example body
 * with an object `depth` levels deep where its schema takes one (a free-form member, say).
 * Undefined when the schema nests no object that deep.
 */
export function deepestCommandBody(entry: CommandEntry, depth: number): Record<string, unknown> | undefined {
  const nested = nestedIn(schemasById[entry.schemas.request], depth);
  return nested === undefined ? undefined : { ...(entry.docs.example.body as Record<string, unknown>), ...nested };
}
