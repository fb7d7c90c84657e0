import { AppError } from '../errors/app-error.js';
import type { SchemaTypes } from '../schemas/schema-files.js';
import type { GatewayCommand } from './catalogue.js';
import { commandHeaders, type CommandEnvironment } from './command-context.js';
import { pathParameters, type CommandEntry, type CommandInput } from './command-entry.js';
import { nameBasedUuid } from './command-event.js';
import type { CommandPublisher, PublishRequest } from './command-publisher.js';
import { fingerprint } from './fingerprint.js';
import type { IdempotencyEntry, IdempotencyKeyRef, IdempotencyStore } from './idempotency-store.js';

/** The validated request of an entry, typed by its schemas. */
export type InputOf<E extends CommandEntry> = CommandInput<SchemaTypes[E['schemas']['path']], SchemaTypes[E['schemas']['request']]>;

/** What a handler answers: the command's id and the HTTP answer's data. */
export interface HandledCommand<Response = unknown> {
  readonly commandId: string;
  readonly response: Response;
}

export type CommandHandler<E extends CommandEntry = CommandEntry> = (input: InputOf<E>) => Promise<HandledCommand<SchemaTypes[E['schemas']['accepted']]>>;

/** One accepted command: what goes onto the topic and what the request is answered. Also the record an Idempotency-Key keeps. */
export interface AcceptedCommand<Response = unknown> {
  readonly publish: PublishRequest;
  readonly response: Response;
}

/**
 * The command id of a request with an Idempotency-Key: a name-based UUID of the
 * organization, the key's scope, the key and the request's digest. Gateways that race on
 * one key without a compare-and-set under them still publish one command id, which
 * every consumer folds; a different request under the key gets another id (and a 422).
 */
export function keyedCommandId(ref: IdempotencyKeyRef, digest: string): string {
  return nameBasedUuid(`idempotency-key:${JSON.stringify([ref.orgId, ref.scope, ref.key, digest])}`);
}

/** Builds an entry's command message and answer for one request; a fresh id unless one is given. */
export function acceptCommand<E extends CommandEntry>(
  entry: E,
  input: InputOf<E>,
  topic: string,
  env: CommandEnvironment,
  commandId?: string,
): AcceptedCommand<SchemaTypes[E['schemas']['accepted']]> {
  const id = commandId ?? env.newId();
  const at = env.now().toISOString();
  const { command, response } = entry.accept(input, id, at);
  const { idempotencyKey } = input;
  return {
    publish: {
      command: {
        topic,
        key: String((input.path as Record<string, unknown>)[entry.partitionKey]),
        commandId: id,
        value: command as GatewayCommand,
        headers: commandHeaders(entry.schemas.command, input.context, idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
      },
    },
    response: response as SchemaTypes[E['schemas']['accepted']],
  };
}

const keyReused = () =>
  new AppError('IDEMPOTENCY_KEY_REUSED', 'Idempotency-Key reused', {
    detail: 'This Idempotency-Key was already used with a different request.',
  });

/** How often a request waiting for another's acknowledgement reads the record again. */
const ACK_POLL_MS = 50;

/**
 * The entry that holds a key, once it is safe to act on. Another request's claim, young
 * enough that its publish may still be under way, is waited for rather than sent again
 * beside it; past the publish's own time bound that request has answered 503 or died, and
 * its claim is the caller's to publish.
 */
async function settledClaim(store: IdempotencyStore, ref: IdempotencyKeyRef, mine: IdempotencyEntry, publishWindowMs: number): Promise<IdempotencyEntry> {
  let held = await store.claim(ref, mine);
  if (held.fingerprint !== mine.fingerprint) throw keyReused();
  while (held.ack === undefined && held.record !== mine.record && (held.ageMs ?? Infinity) < publishWindowMs) {
    await new Promise((resolve) => setTimeout(resolve, ACK_POLL_MS));
    held = await store.claim(ref, mine);
  }
  return held;
}

export interface CommandHandlerDependencies {
  readonly publisher: CommandPublisher;
  readonly idempotency: IdempotencyStore;
  readonly topic: string;
  readonly env: CommandEnvironment;
  /**
   * How long a publish may take before its request gives up (COMMAND_TIMEOUT_MS plus a
   * margin): a claim without an acknowledgement younger than this may still be publishing.
   */
  readonly publishWindowMs: number;
  /** Hears of an acknowledgement the idempotency store could not record (for a log line). */
  readonly onAckNotRecorded?: (error: unknown) => void;
}

/**
 * Carries out one entry's requests: builds the command, publishes it, answers. With an
 * Idempotency-Key, the accepted command is recorded before it is published, and Kafka's
 * acknowledgement (partition, offset) is recorded after. A retry answers as before; it
 * publishes nothing once the acknowledgement is recorded, and only a claim without one (a
 * crash or a 503 between claim and acknowledgement) is published again, as the same
 * command (same id, same time), which consumers and the feed fold
 * (docs/decisions/idempotency.md).
 *
 * Requests with one key that overlap in this process share one flight: one command, one
 * answer. Across processes the idempotency store decides: with Keeper its claim is a
 * compare-and-set and every gateway publishes the one record that won; without, the
 * command id derived from the key makes racing gateways' commands one command.
 */
export function createCommandHandler<E extends CommandEntry>(entry: E, deps: CommandHandlerDependencies): CommandHandler<E> {
  type Answer = HandledCommand<SchemaTypes[E['schemas']['accepted']]>;
  const inFlight = new Map<string, { readonly digest: string; readonly answer: Promise<Answer> }>();
  const answerOf = ({ publish, response }: AcceptedCommand<Answer['response']>): Answer => ({ commandId: publish.command.commandId, response });

  async function publishOnce(input: InputOf<E>, ref: IdempotencyKeyRef, digest: string): Promise<Answer> {
    const mine = acceptCommand(entry, input, deps.topic, deps.env, keyedCommandId(ref, digest));
    const held = await settledClaim(deps.idempotency, ref, { fingerprint: digest, record: JSON.stringify(mine) }, deps.publishWindowMs);
    const accepted = JSON.parse(held.record) as AcceptedCommand<Answer['response']>;
    // Acknowledged before: the command is on its topic, and a retry must not add a copy.
    if (held.ack !== undefined) return answerOf(accepted);
    const ack = await deps.publisher.publish(accepted.publish);
    // The command is durable whatever happens here: a record that failed to note the
    // acknowledgement only lets a later retry publish the same command_id again.
    await deps.idempotency.acknowledge(ref, digest, JSON.stringify(ack)).catch((error: unknown) => deps.onAckNotRecorded?.(error));
    return answerOf(accepted);
  }

  return async (input) => {
    if (entry.idempotency === undefined || input.idempotencyKey === undefined) {
      const accepted = acceptCommand(entry, { ...input, idempotencyKey: undefined }, deps.topic, deps.env);
      await deps.publisher.publish(accepted.publish);
      return answerOf(accepted);
    }
    const path = input.path as Record<string, unknown>;
    const ref: IdempotencyKeyRef = {
      orgId: input.context.orgId,
      scope: [entry.idempotency.scope, ...pathParameters(entry).map((name) => String(path[name]))].join(':'),
      key: input.idempotencyKey,
    };
    const digest = fingerprint({ path: input.path, body: input.body });
    const flightKey = JSON.stringify([ref.orgId, ref.scope, ref.key]);
    const running = inFlight.get(flightKey);
    if (running !== undefined) {
      if (running.digest !== digest) throw keyReused();
      return running.answer;
    }
    const answer = publishOnce(input, ref, digest);
    inFlight.set(flightKey, { digest, answer });
    try {
      return await answer;
    } finally {
      inFlight.delete(flightKey);
    }
  };
}
