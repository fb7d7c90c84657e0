import type { CanonicalEvent } from '../generated/schema-types.js';
import { MAX_JSON_DEPTH } from '../json/bounded-json.js';
import type { SchemaId, SchemaTypes } from '../schemas/schema-files.js';
import type { CommandContext } from './command-context.js';

/**
 * How deep a command's request body may nest. Every command message carries its body one
 * level down (a member of the message), and the consumer, like any reader of the topic
 * contract, refuses a message nested deeper than MAX_JSON_DEPTH: a body of MAX_JSON_DEPTH
 * levels was answered 2xx and its command dead-lettered, its event never on the feed.
 */
export const COMMAND_BODY_MAX_DEPTH = MAX_JSON_DEPTH - 1;

/** A command's validated request: path parameters (lower-cased), body and Idempotency-Key. */
export interface CommandInput<Path = unknown, Body = unknown> {
  readonly context: CommandContext;
  readonly path: Path;
  readonly body: Body;
  /** Only ever set for a command with an idempotency scope. */
  readonly idempotencyKey: string | undefined;
}

/** Where a command's messages go: its topic's key in config.topics, the setting that renames it, and its name by default. */
export interface CommandTopic<Key extends string = string> {
  readonly configKey: Key;
  readonly setting: string;
  readonly default: string;
}

/**
 * One command of the Core API, as data: everything the gateway does with it on the wire.
 * The router, the generic handler (command-handler.ts), the permission and topic lists, the
 * consumer and the OpenAPI and AsyncAPI documents read this and nothing else, so a new
 * command is one entry (src/commands/catalogue/), its schemas and its tests.
 *
 * Functions are methods so that an entry of particular schemas is an entry of any schemas
 * (the generic code handles each through its schema ids, validated at the edges).
 */
export interface CommandEntry<
  Name extends string = string,
  Permission extends string = string,
  TopicKey extends string = string,
  P extends SchemaId = SchemaId,
  R extends SchemaId = SchemaId,
  A extends SchemaId = SchemaId,
  C extends SchemaId = SchemaId,
> {
  /** Names the command in code and its messages' format on the consumer (`<name>-command`). */
  readonly name: Name;
  /** The `type` field of its command messages, by which the consumer tells commands apart. */
  readonly type: string;
  readonly http: {
    readonly method: 'post' | 'patch' | 'put';
    /** Under /core/api/v1, in @koa/router's syntax; every parameter is a uuid of the path schema. */
    readonly path: string;
    readonly status: 200 | 202;
    /** What a request without a body means: a body of this value, or a refusal with this text. */
    readonly absentBody: { readonly value: SchemaTypes[R] } | { readonly refusal: string };
  };
  /** The scope a token must carry. */
  readonly permission: Permission;
  readonly schemas: { readonly path: P; readonly request: R; readonly accepted: A; readonly command: C };
  readonly topic: CommandTopic<TopicKey>;
  /** The path parameter its messages are keyed by: one such thing's commands stay in order on one partition. */
  readonly partitionKey: string;
  /** The answer's field that holds the command's id (its event's correlation_id; what a retry with its Idempotency-Key gets again). */
  readonly idField: string;
  /** Present when the command takes an Idempotency-Key: keys are scoped by organization, this name and the path. */
  readonly idempotency: { readonly scope: string } | undefined;
  /** The command message and the HTTP answer of one accepted request, with its id and time. */
  accept(input: CommandInput<SchemaTypes[P], SchemaTypes[R]>, commandId: string, at: string): { command: SchemaTypes[C]; response: SchemaTypes[A] };
  /** The canonical event the consumer derives from each command (command-event.ts adds ids, times and trace). */
  readonly event: {
    readonly domain: string;
    readonly entity: string;
    readonly action: string;
    deviceId(command: SchemaTypes[C]): string | null;
    payload(command: SchemaTypes[C]): CanonicalEvent['payload'];
  };
  /** Words of the OpenAPI and AsyncAPI documents; everything else in them is derived. */
  readonly docs: CommandDocs<SchemaTypes[P], SchemaTypes[R]>;
}

export interface CommandDocs<Path = unknown, Body = unknown> {
  readonly operationId: string;
  /**
   * Its OpenAPI tag, and what this entry adds to the tag's description ("Device enrollment"): a
   * tag several entries share is described by each of them in turn, and the API's own description
   * names every entry's.
   */
  readonly tag: { readonly name: string; readonly description: string };
  readonly summary: string;
  readonly accepted: string;
  /** The AsyncAPI message's name, e.g. EnrollmentCommand; its channel is the topic's configKey. */
  readonly message: string;
  readonly title: string;
  readonly messageSummary: string;
  readonly keyDescription: string;
  /**
   * The documents' example request. `anotherBody` is a second valid body, unlike `body`: the tests'
   * other request on the same path (an Idempotency-Key reused with another request, say).
   */
  readonly example: {
    readonly name: string;
    readonly summary: string;
    readonly path: Path;
    readonly body: Body;
    readonly anotherBody: Body;
    readonly idempotencyKey?: string;
  };
  readonly channel: { readonly title: string; readonly description: string };
  readonly publish: { readonly title: string; readonly summary: string };
  readonly ingest: { readonly title: string; readonly summary: string };
}

/** Declares an entry, keeping its literal names and schema ids for the types derived from the catalogue. */
export function defineCommand<
  const Name extends string,
  const Permission extends string,
  const TopicKey extends string,
  P extends SchemaId,
  R extends SchemaId,
  A extends SchemaId,
  C extends SchemaId,
>(
  entry: CommandEntry<Name, Permission, TopicKey, P, R, A, C> & {
    // Checked here rather than in CommandEntry, so that an entry of particular schemas stays an entry of any.
    readonly partitionKey: keyof SchemaTypes[P] & string;
    readonly idField: keyof SchemaTypes[A] & string;
  },
): CommandEntry<Name, Permission, TopicKey, P, R, A, C> {
  return entry;
}

/** The path parameters of an entry's route, in the order the path names them. */
export function pathParameters(entry: Pick<CommandEntry, 'http'>): string[] {
  return [...entry.http.path.matchAll(/:([a-z_]+)/g)].map((match) => match[1]!);
}
