import { catalogue } from '../commands/catalogue.js';
import type { CommandEntry } from '../commands/command-entry.js';
import { IDEMPOTENCY_KEY } from '../commands/idempotency-key.js';
import { JSON_TYPES } from '../http/json-body.js';
import type { JsonObject, JsonValue } from '../json/json-value.js';
import { CONTRACT_CONTACT, CONTRACT_VERSION, OPENAPI_LICENSE } from '../schemas/contract-info.js';
import { componentRef as ref, referencedComponents, schemaComponent as component } from '../schemas/schema-components.js';
import { schemasById, type SchemaId } from '../schemas/schema-files.js';

/** Path or query parameters from the same schema the route validates them with. */
function parameters(id: SchemaId, where: 'path' | 'query'): JsonValue[] {
  const schema = schemasById[id] as { properties: Record<string, JsonValue>; required?: string[] };
  return Object.entries(schema.properties).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || (schema.required ?? []).includes(name),
    schema: component(property),
  }));
}

/** A content map of `schema` under each media type; answers are `application/json`. */
const json = (schema: JsonValue, types: readonly string[] = ['application/json']): JsonObject => ({ content: Object.fromEntries(types.map((type) => [type, { schema }])) });

/** The success envelope { ok: 1, data, meta: null } around a data schema. */
const envelope = (data: JsonValue): JsonObject => ({
  type: 'object',
  additionalProperties: false,
  required: ['ok', 'data', 'meta'],
  properties: { ok: { const: 1 }, data, meta: { type: 'null' } },
});

const ERROR_MEANINGS: Record<number, string> = {
  400: 'Invalid request: the message names each bad field.',
  401: 'Missing, invalid or repeated credentials (bearer token or ORG-ID); a repeated header is named in the message.',
  403: 'The token does not allow this organization or operation.',
  413: 'Body over 64 KiB.',
  415: 'Body is not JSON.',
  422: 'Idempotency-Key already used with another request.',
  500: 'Unexpected fault; no internals are shown.',
  503: 'A dependency (Kafka or the event store) is unavailable; retry after Retry-After.',
};

function errors(...statuses: number[]): JsonObject {
  return Object.fromEntries(statuses.map((status) => [String(status), { description: ERROR_MEANINGS[status]!, ...json(ref('error-envelope.schema.json')) }]));
}

/** The per-organization rate limit's answer on the feed and each command; made anew each time, as tools that resolve $ref rewrite it in place. */
const rateLimited = (): JsonObject => ({
  '429': {
    description:
      'The organization is over its request rate on this gateway (RATE_LIMIT_PER_ORG, when set), or the client has failed authentication too often (AUTH_FAILURES_PER_MINUTE); retry after Retry-After.',
    headers: { 'Retry-After': { description: 'Whole seconds, at least 1, until a request fits the rate again.', schema: { type: 'integer', minimum: 1 } } },
    ...json(ref('error-envelope.schema.json')),
  },
});

const idempotencyKey = (idField: string): JsonObject => ({
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: `Makes a retry return the first answer (same ${idField}) for 24 hours.`,
  // The rule the gateway enforces (1 to 255 printable ASCII characters), written once.
  schema: { type: 'string', pattern: IDEMPOTENCY_KEY.source },
});
const traceparent: JsonObject = {
  name: 'traceparent',
  in: 'header',
  required: false,
  description: 'W3C trace context, carried into the command and its canonical event.',
  schema: { type: 'string' },
};

const TAGS = { events: 'events' } as const;

/** `a`, `a and b`, `a, b and c`. */
const inWords = (items: readonly string[]): string => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)!}`);

/** An entry's path and operation: parameters, body and answers follow from its schemas, permission and idempotency. */
function commandPath(entry: CommandEntry): [string, JsonObject] {
  const path = entry.http.path.replace(/:([a-z_]+)/g, '{$1}');
  const idempotent = entry.idempotency === undefined ? [] : [idempotencyKey(entry.idField)];
  const operation = {
    operationId: entry.docs.operationId,
    tags: [entry.docs.tag.name],
    summary: entry.docs.summary,
    description: `Needs the ${entry.permission} permission. Answers once Kafka acknowledged the command.`,
    parameters: [...parameters(entry.schemas.path, 'path'), ...idempotent, traceparent],
    // Every media type the body reader takes.
    requestBody: { required: 'refusal' in entry.http.absentBody, ...json(ref(entry.schemas.request), JSON_TYPES) },
    responses: {
      [String(entry.http.status)]: { description: entry.docs.accepted, ...json(envelope(ref(entry.schemas.accepted))) },
      ...errors(400, 401, 403, 413, 415, ...(entry.idempotency === undefined ? [] : [422]), 500, 503),
      ...rateLimited(),
    },
  };
  return [path, { [entry.http.method]: operation }];
}

/**
 * The OpenAPI 3.1 document of the Core API, built from schemas/ alone: the same files
 * drive request validation, the TypeScript types and this. docs/openapi.json is its
 * checked-in copy (npm run openapi:generate), and npm test fails when that drifts.
 */
export function openApiDocument(): JsonObject {
  const document = {
    openapi: '3.1.0',
    info: {
      title: 'Core HTTP API',
      version: CONTRACT_VERSION,
      description:
        `${inWords(['Event feed', ...catalogue.map(({ docs }) => docs.tag.description.charAt(0).toLowerCase() + docs.tag.description.slice(1))])} of the device-management platform. The Kafka topics the commands go to, and the events come from, are described by the AsyncAPI document at /core/api/v1/asyncapi.json.`,
      contact: CONTRACT_CONTACT,
      license: OPENAPI_LICENSE,
    },
    servers: [{ url: '/core/api/v1' }],
    security: [{ bearer: [], orgId: [] }],
    tags: [
      { name: TAGS.events, description: 'The project\'s canonical events: the paged feed and its live tail.' },
      // A tag is described by every entry that names it, each in its own words.
      ...[...new Set(catalogue.map(({ docs }) => docs.tag.name))].map((name) => ({
        name,
        description: catalogue
          .filter(({ docs }) => docs.tag.name === name)
          .map(({ docs, topic }) => `${docs.tag.description}, published as a command to ${topic.default}.`)
          .join(' '),
      })),
    ],
    paths: {
      '/projects/{project_id}/events': {
        get: {
          operationId: 'listCanonicalEvents',
          tags: [TAGS.events],
          summary: 'A keyset-paginated page of a project\'s canonical events, newest first.',
          description:
            'Needs the events:read permission. limit is clamped to 1..200 (default 50), never rejected for its size. since and until (extensions beyond v1) bound occurred_at to [since, until); a cursor is valid only with the bounds and filters it was issued for.',
          parameters: [
            ...parameters('project-path.schema.json', 'path'),
            ...parameters('events-query.schema.json', 'query'),
            { name: 'If-None-Match', in: 'header', required: false, description: 'The ETag of a page read before: 304 while it is unchanged.', schema: { type: 'string' } },
          ],
          responses: {
            '200': {
              description: 'A page of events.',
              headers: { ETag: { description: 'Weak validator of this page, for If-None-Match.', schema: { type: 'string' } } },
              ...json(ref('canonical-event-page.schema.json')),
            },
            '304': { description: 'Not modified: the page still has the ETag given in If-None-Match.' },
            ...errors(400, 401, 403, 500, 503),
            ...rateLimited(),
          },
        },
      },
      '/projects/{project_id}/events/stream': {
        get: {
          operationId: 'streamCanonicalEvents',
          tags: [TAGS.events],
          summary: 'A live tail of a project\'s canonical events as Server-Sent Events (extension beyond v1), in ingestion order.',
          description:
            'Needs the events:read permission and takes the feed\'s filters; cursor, limit, since and until are refused. Events come in the order they were ingested, so late telemetry still arrives, each as `id: <position>` and one `data:` line of CanonicalEvent JSON; `: heartbeat` comments keep an idle stream open. Without Last-Event-ID the stream starts with new events; with it, it sends exactly the events after that one. See docs/decisions/live-tail.md.',
          parameters: [
            ...parameters('project-path.schema.json', 'path'),
            ...parameters('events-stream-query.schema.json', 'query'),
            {
              name: 'Last-Event-ID',
              in: 'header',
              required: false,
              description: 'The id of the last event received: the stream resumes right after it, with no gap and no repeat.',
              // The same rule src/feed/tail/tail-position.ts enforces before decoding.
              schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{34}$' },
            },
          ],
          responses: {
            '200': {
              description: 'The stream: `retry: 2000` first, then one message per event (`id:` and `data:`, no `event:` field) and heartbeat comments, until the client or the gateway closes it. When the gateway ends it (a client reading too slowly, a shutdown), the last message is `event: closing` with the error envelope as data and no `id:`, so the client resumes with Last-Event-ID.',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            ...errors(400, 401, 403),
            '429': {
              description: 'The caller, the organization or this gateway has as many live tails open as it may (STREAM_MAX_PER_CALLER, STREAM_MAX_PER_ORG, STREAM_MAX_PER_PROCESS), or the organization\'s request rate limit is spent (RATE_LIMIT_PER_ORG); retry after Retry-After.',
              headers: { 'Retry-After': { description: 'Seconds to wait before opening again.', schema: { type: 'integer' } } },
              ...json(ref('error-envelope.schema.json')),
            },
            ...errors(500, 503),
          },
        },
      },
      ...Object.fromEntries(catalogue.map(commandPath)),
    },
  };
  return {
    ...document,
    components: {
      // Only what the operations use: the Kafka messages are the AsyncAPI document's.
      schemas: referencedComponents(document.paths),
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        orgId: { type: 'apiKey', in: 'header', name: 'ORG-ID', description: 'The organization (uuid) the request acts for.' },
      },
    },
  };
}
