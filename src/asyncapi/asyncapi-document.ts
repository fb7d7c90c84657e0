import { REQUEST_ID_MESSAGE_HEADER, type CommandContext, type CommandEnvironment } from '../commands/command-context.js';
import { catalogue } from '../commands/catalogue.js';
import type { CommandEntry } from '../commands/command-entry.js';
import { acceptCommand } from '../commands/command-handler.js';
import type { PublishRequest } from '../commands/command-publisher.js';
import { IDEMPOTENCY_KEY } from '../commands/idempotency-key.js';
import { CALLER_REQUEST_ID } from '../http/request-context.js';
import { deadLetterMessage } from '../ingest/dead-letter.js';
import { REJECT_REASONS } from '../ingest/event-ingestor.js';
import type { JsonObject, JsonValue } from '../json/json-value.js';
import { CONTRACT_CONTACT, CONTRACT_LICENSE_NAME, CONTRACT_VERSION } from '../schemas/contract-info.js';
import { componentRef, referencedComponents } from '../schemas/schema-components.js';
import type { SchemaId } from '../schemas/schema-files.js';

/** The Kafka bindings version whose fields the document uses (message key, consumer group). */
const KAFKA_BINDING = '0.5.0';

const UUID: JsonObject = { type: 'string', format: 'uuid' };

/** The headers every message the gateway writes carries (src/commands/command-context.ts), naming its schema. */
function schemaHeaders(schema: SchemaId): JsonObject {
  return {
    'content-type': { const: 'application/json', description: 'The value is UTF-8 JSON.' },
    schema: { const: schema, description: 'The file of schemas/ the value validates against.' },
    'schema-version': { const: '1', description: 'The version of that schema.' },
  };
}

const requestId: JsonObject = {
  type: 'string',
  // The rule src/http/request-context.ts keeps a caller's X-Request-Id by; the ids it makes itself are UUIDs, which pass it too.
  pattern: CALLER_REQUEST_ID.source,
  description: 'The id of the HTTP request that caused the command, as its answer\'s X-Request-Id: the same id is on the gateway\'s and the consumer\'s log lines.',
};

const traceparent: JsonObject = {
  type: 'string',
  // What formatTraceparent (src/observability/trace-context.ts) writes: version 00, sampled.
  pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-01$',
  description: 'W3C trace context of the HTTP request, when it carried a valid traceparent: the command\'s canonical event carries its trace and span ids.',
};

/** Header schemas: Kafka header values are bytes, and every header here is UTF-8 text. */
function headers(properties: JsonObject, required: readonly string[], others: JsonValue): JsonObject {
  return { type: 'object', required: [...required], properties, additionalProperties: others };
}

/** Fixed ids and times, so that the examples stay the same from one generation to the next. */
const EXAMPLE = {
  org: '0d7f6a52-3c1b-4f0e-9a8d-2b5c4e6f7a81',
  project: '5b2e9c41-7d3a-4e8f-b1c6-9a0d2f4e6b13',
  fleet: 'c3a8e5d2-1f4b-4a6c-8e9d-7b0a2c4e6f35',
  device: '9e4d2c1b-8a7f-4e6d-b5c3-1a2b3c4d5e6f',
  command: 'f2b7c9a4-6e1d-4c3b-9a8f-5d0e2b4c6a79',
  event: '1a3c5e7f-9b2d-4f6a-8c0e-2d4f6a8c0e1b',
  requestId: '7c9e1a3b-5d7f-4b9d-a1c3-e5f7a9b1d3e5',
} as const;
const exampleEnvironment: CommandEnvironment = { now: () => new Date('2026-03-02T09:30:00.000Z'), newId: () => EXAMPLE.command };
const exampleContext: CommandContext = {
  orgId: EXAMPLE.org,
  requestedBy: 'operator-7',
  trace: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' },
  requestId: EXAMPLE.requestId,
};

/** A message example made by the code that makes the real messages. */
const commandExample = (name: string, summary: string, { command }: PublishRequest): JsonObject => ({
  name,
  summary,
  headers: { ...command.headers },
  payload: command.value as unknown as JsonObject,
});

function commandMessage(options: {
  name: string;
  schema: SchemaId;
  title: string;
  summary: string;
  key: JsonObject;
  extraHeaders?: JsonObject;
  example: JsonObject;
}): JsonObject {
  return {
    name: options.name,
    title: options.title,
    summary: options.summary,
    contentType: 'application/json',
    correlationId: {
      description: `command_id is the id the HTTP answer returned (${[...new Set(catalogue.map((entry) => entry.idField))].join(' or ')}); a retry with the same Idempotency-Key sends the same command_id again.`,
      location: '$message.payload#/command_id',
    },
    headers: headers(
      { ...schemaHeaders(options.schema), [REQUEST_ID_MESSAGE_HEADER]: requestId, traceparent, ...options.extraHeaders },
      ['content-type', 'schema', 'schema-version', REQUEST_ID_MESSAGE_HEADER],
      // The gateway writes exactly these: a new header is a change of this contract.
      false,
    ),
    payload: componentRef(options.schema),
    bindings: { kafka: { key: options.key, bindingVersion: KAFKA_BINDING } },
    examples: [options.example],
  };
}

/** The message of a catalogue entry's topic, its example made by the code that makes the real messages. */
function entryMessage(entry: CommandEntry): JsonObject {
  const { docs } = entry;
  return commandMessage({
    name: docs.message,
    schema: entry.schemas.command,
    title: docs.title,
    summary: docs.messageSummary,
    key: { ...UUID, description: docs.keyDescription },
    ...(entry.idempotency === undefined
      ? {}
      : {
          extraHeaders: {
            'idempotency-key': {
              type: 'string',
              // The rule src/commands/idempotency-key.ts takes the request's Idempotency-Key by.
              pattern: IDEMPOTENCY_KEY.source,
              description: 'The request\'s Idempotency-Key, when it had one (also in the value, as idempotency_key).',
            },
          },
        }),
    example: commandExample(
      docs.example.name,
      docs.example.summary,
      acceptCommand(
        entry,
        { context: exampleContext, path: docs.example.path, body: docs.example.body, idempotencyKey: docs.example.idempotencyKey },
        entry.topic.default,
        exampleEnvironment,
      ).publish,
    ),
  });
}

/** An entry's channel, operation and message-in-channel names: its topic's key in config.topics, and its message's name. */
const channelOf = (entry: CommandEntry): string => entry.topic.configKey;
const channelMessageOf = (entry: CommandEntry): string => entry.docs.message.charAt(0).toLowerCase() + entry.docs.message.slice(1);
const capitalized = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1);

const messages: JsonObject = {
  CanonicalEvent: {
    name: 'CanonicalEvent',
    title: 'Canonical event',
    summary: 'One platform event, as the feed serves it once stored.',
    description:
      'Unknown fields are refused, so that nothing a producer sends is silently dropped. occurred_at is RFC 3339 with any offset and up to microsecond precision, within the years 1900 to 2299. id identifies the event: sending it again is harmless, the feed shows it once. A message that breaks these rules goes to the dead-letter topic.',
    contentType: 'application/json',
    headers: headers(
      { ...schemaHeaders('canonical-event.schema.json') },
      [],
      // The consumer reads no header of an event and keeps them all on a dead letter.
      { type: 'string' },
    ),
    payload: componentRef('canonical-event.schema.json'),
    bindings: {
      kafka: {
        key: { ...UUID, description: 'device_id, else project_id: one device\'s events share a partition and stay in order.' },
        bindingVersion: KAFKA_BINDING,
      },
    },
    examples: [
      {
        name: 'telemetry-reading',
        summary: 'A reading another service publishes, keyed by its device_id',
        headers: { 'content-type': 'application/json', schema: 'canonical-event.schema.json', 'schema-version': '1' },
        payload: {
          id: EXAMPLE.event,
          org_id: EXAMPLE.org,
          project_id: EXAMPLE.project,
          device_id: EXAMPLE.device,
          fleet_id: EXAMPLE.fleet,
          domain: 'telemetry',
          entity: 'reading',
          action: 'recorded',
          occurred_at: '2026-03-02T09:29:58.123456+01:00',
          payload: { temperature: 21.5 },
          source_service: 'sensor-hub',
        },
      },
    ],
  },
  ...Object.fromEntries(catalogue.map((entry) => [entry.docs.message, entryMessage(entry)])),
  DeadLetter: {
    name: 'DeadLetter',
    title: 'Dead letter',
    summary: 'A message the ingest consumer could not store, unchanged, with why and where from.',
    description:
      'Key, value and headers are the message as it was read, so that it can be fixed and produced again; the dlq-* headers are added. A partition\'s dead letters come in the order its messages came. A letter too large for this topic\'s max.message.bytes comes as a reference instead: the dlq-* headers with dlq-truncated, none of its own, and the first 1,024 bytes of its key and value; the message stays at dlq-source-offset on its source topic. A store that is unavailable dead-letters nothing: the consumer waits for it. Each refused message appears here once for readers with isolation level read_committed: a batch\'s letters and its offsets are committed in one Kafka transaction. Readers with read_uncommitted may also see copies from aborted transactions (a consumer that crashed or lost its partitions before the commit).',
    contentType: 'application/octet-stream',
    headers: headers(
      {
        'dlq-reason': { enum: [...REJECT_REASONS], description: 'Why: found by validation, or store-rejected when the store refused a valid event (a table constraint, a value its column cannot hold).' },
        // src/ingest/dead-letter.ts cuts the detail to 1000 characters.
        'dlq-detail': { type: 'string', maxLength: 1000, description: 'What was wrong, e.g. "id is required", or the store\'s refusal.' },
        'dlq-source-topic': { type: 'string', minLength: 1, description: 'The topic the message was read from: an events topic or a command topic.' },
        'dlq-source-partition': { type: 'string', pattern: '^[0-9]+$', description: 'Its partition there.' },
        'dlq-source-offset': { type: 'string', pattern: '^[0-9]+$', description: 'Its offset there.' },
        'dlq-truncated': { const: 'true', description: 'Only on a reference: the message was too large to dead-letter whole, and key and value are its first 1,024 bytes.' },
        'dlq-original-value-bytes': { type: 'string', pattern: '^[0-9]+$', description: 'Only on a reference: the size of the message\'s value.' },
        'dlq-original-key-bytes': { type: 'string', pattern: '^[0-9]+$', description: 'Only on a reference: the size of the message\'s key.' },
      },
      ['dlq-reason', 'dlq-detail', 'dlq-source-topic', 'dlq-source-partition', 'dlq-source-offset'],
      // The message's own headers, as received.
      { type: 'string' },
    ),
    payload: { description: 'The value as it was read: any bytes, or none; most often JSON that broke the rules of its topic.' },
    examples: [deadLetterExample()],
    bindings: {
      kafka: { key: { type: ['string', 'null'], description: 'The key as it was read, or none.' }, bindingVersion: KAFKA_BINDING },
    },
  },
};

/** An event without its id, as the consumer dead-letters it (src/ingest/dead-letter.ts). */
function deadLetterExample(): JsonObject {
  const value = JSON.stringify({ org_id: EXAMPLE.org, project_id: EXAMPLE.project, domain: 'telemetry', entity: 'reading', action: 'recorded', occurred_at: '2026-03-02T09:29:58Z' });
  const letter = deadLetterMessage({
    message: { key: EXAMPLE.project, value, headers: { 'content-type': 'application/json' }, source: { topic: 'platform.events', partition: 3, offset: '18842' } },
    reason: 'schema-violation',
    detail: 'id is required',
  });
  return {
    name: 'event-without-id',
    summary: 'An event published without its id',
    headers: Object.fromEntries(Object.entries(letter.headers ?? {}).map(([name, header]) => [name, String(header)])),
    payload: String(letter.value),
  };
}

const channelMessage = (channel: string, message: string): JsonObject => ({ $ref: `#/channels/${channel}/messages/${message}` });

const channels: JsonObject = {
  events: {
    address: 'platform.events',
    title: 'Platform events',
    description:
      'Canonical events that other services publish (acks=-1, keyed by device_id, else project_id); the ingest consumer stores them for the feed. The gateway\'s own events are not written here: they are derived from the command topics. Renamed, or more topics listed, by EVENTS_TOPICS.',
    messages: { canonicalEvent: { $ref: '#/components/messages/CanonicalEvent' } },
  },
  ...Object.fromEntries(
    catalogue.map((entry) => [
      channelOf(entry),
      {
        address: entry.topic.default,
        title: entry.docs.channel.title,
        description: `${entry.docs.channel.description} Renamed by ${entry.topic.setting}.`,
        messages: { [channelMessageOf(entry)]: { $ref: `#/components/messages/${entry.docs.message}` } },
      },
    ]),
  ),
  deadLetters: {
    address: 'platform.events.dlq',
    title: 'Dead letters',
    description:
      'Messages of the events and command topics that the ingest consumer could not store; a bad message never stops its partition. Written only by the ingest consumer; read by whoever repairs and replays them. Renamed by EVENTS_DLQ_TOPIC.',
    messages: { deadLetter: { $ref: '#/components/messages/DeadLetter' } },
  },
};

const ROLE_TAGS = {
  gateway: { $ref: '#/components/tags/gateway' },
  consumer: { $ref: '#/components/tags/consumer' },
} as const;

/** The consumer group's binding: every ingest consumer is one member of it. */
const ingestGroup: JsonObject = {
  kafka: {
    groupId: { type: 'string', default: 'core-gateway-ingest', description: 'KAFKA_CONSUMER_GROUP; its committed offsets are how far ingestion got.' },
    bindingVersion: KAFKA_BINDING,
  },
};

const operations: JsonObject = {
  ...Object.fromEntries(
    catalogue.map((entry) => [
      `publish${entry.docs.message}`,
      {
        action: 'send',
        channel: { $ref: `#/channels/${channelOf(entry)}` },
        title: entry.docs.publish.title,
        summary: entry.docs.publish.summary,
        tags: [ROLE_TAGS.gateway],
        messages: [channelMessage(channelOf(entry), channelMessageOf(entry))],
      },
    ]),
  ),
  ingestEvents: {
    action: 'receive',
    channel: { $ref: '#/channels/events' },
    title: 'Ingest platform events',
    summary: 'The ingest consumer validates each event and stores it for the feed; one that breaks the rules is dead-lettered.',
    tags: [ROLE_TAGS.consumer],
    bindings: ingestGroup,
    messages: [channelMessage('events', 'canonicalEvent')],
  },
  ...Object.fromEntries(
    catalogue.map((entry) => [
      `ingest${capitalized(channelOf(entry))}`,
      {
        action: 'receive',
        channel: { $ref: `#/channels/${channelOf(entry)}` },
        title: entry.docs.ingest.title,
        summary: entry.docs.ingest.summary,
        tags: [ROLE_TAGS.consumer],
        bindings: ingestGroup,
        messages: [channelMessage(channelOf(entry), channelMessageOf(entry))],
      },
    ]),
  ),
  deadLetter: {
    action: 'send',
    channel: { $ref: '#/channels/deadLetters' },
    title: 'Dead-letter a message',
    summary: 'The ingest consumer writes each message it cannot store here, before it commits past it.',
    tags: [ROLE_TAGS.consumer],
    messages: [channelMessage('deadLetters', 'deadLetter')],
  },
};

/**
 * The AsyncAPI 3.0 document of the topics the gateway writes and reads, from the gateway's
 * side (ROLE=gateway publishes the commands, ROLE=consumer ingests and dead-letters). Its
 * message values are the schemas/ files that AJV checks them with and that the
 * TypeScript types and the OpenAPI document come from. docs/asyncapi.json is its
 * checked-in copy (npm run asyncapi:generate), and npm test fails when that drifts.
 */
export function asyncApiDocument(): JsonObject {
  const body: JsonObject = { channels, operations, messages };
  return {
    asyncapi: '3.0.0',
    id: 'urn:core-gateway:kafka',
    info: {
      title: 'Core gateway topics',
      version: CONTRACT_VERSION,
      description:
        'The Kafka topics of the Core API\'s gateway: the commands it publishes for the requests it accepts, the platform events its ingest consumer stores for the feed, and the dead letters of what could not be stored. Topic names are the defaults; each can be renamed by configuration. The HTTP API is described by the OpenAPI document at /core/api/v1/openapi.json.',
      contact: CONTRACT_CONTACT,
      license: { name: CONTRACT_LICENSE_NAME },
    },
    defaultContentType: 'application/json',
    channels,
    operations,
    components: {
      schemas: referencedComponents(body),
      messages,
      tags: {
        gateway: { name: 'gateway', description: 'Done by the gateway (ROLE=gateway or all), for the HTTP requests it answers.' },
        consumer: { name: 'consumer', description: 'Done by the ingest consumer (ROLE=consumer or all), one member of the consumer group.' },
      },
    },
  };
}
