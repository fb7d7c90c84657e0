import { AppError } from '../errors/app-error.js';
import type { SchemaTypes } from '../schemas/schema-files.js';
import type { GatewayCommand } from './catalogue.js';
import { commandHeaders, type CommandEnvironment } from './command-context.js';
import { pathParameters, type CommandEntry, type CommandInput } from './command-entry.js';
import { nameBasedUuid } from './command-event.js';
import type { CommandPublisher, PublishAck, PublishRequest } from './command-publisher.js';
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

/** How often a request waiting for another's acknowledgement reads the record again: from the first delay, doubling, up to the last. */
const ACK_POLL_FIRST_MS = 50;
const ACK_POLL_MAX_MS = 400;
/** Delays between tries to record an acknowledgement, doubling up to the last. */
const ACK_WRITE_RETRY_FIRST_MS = 100;
const ACK_WRITE_RETRY_MAX_MS = 1000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The entry that holds a key, once it is safe to act on. Another request's claim, within
 * its lease: its publish or its acknowledgement may still be under way, so wait for the
 * acknowledgement rather than send a copy beside it. Past the lease that request has
 * answered 503 or died, and its claim is the caller's to publish.
 */
async function settledClaim(store: IdempotencyStore, ref: IdempotencyKeyRef, mine: IdempotencyEntry, claimLeaseMs: number): Promise<IdempotencyEntry> {
  let held = await store.claim(ref, mine);
  if (held.fingerprint !== mine.fingerprint) throw keyReused();
  const othersInLease = () => held.ack === undefined && held.record !== mine.record && (held.ageMs ?? Infinity) < claimLeaseMs;
  for (let delay = ACK_POLL_FIRST_MS; othersInLease(); delay = Math.min(delay * 2, ACK_POLL_MAX_MS)) {
    await sleep(delay);
    held = await store.claim(ref, mine);
  }
  return held;
}

/**
 * Records the acknowledgement, trying again while the claim's lease lasts: a store that
 * answers slowly for a moment must not make a racing request publish a copy. The command
 * is durable whatever happens here: an acknowledgement never recorded only lets a later
 * retry publish the same command_id again.
 */
async function recordAck(
  store: IdempotencyStore,
  ack: { readonly ref: IdempotencyKeyRef; readonly digest: string; readonly value: string; readonly leaseEnds: number },
  onAckNotRecorded: ((error: unknown) => void) | undefined,
): Promise<void> {
  for (let delay = ACK_WRITE_RETRY_FIRST_MS; ; delay = Math.min(delay * 2, ACK_WRITE_RETRY_MAX_MS)) {
    try {
      await store.acknowledge(ack.ref, ack.digest, ack.value);
      return;
    } catch (error) {
      if (Date.now() + delay >= ack.leaseEnds) {
        onAckNotRecorded?.(error);
        return;
      }
      await sleep(delay);
    }
  }
}

export interface CommandHandlerDependencies {
  readonly publisher: CommandPublisher;
  readonly idempotency: IdempotencyStore;
  readonly topic: string;
  readonly env: CommandEnvironment;
  /**
   * How long a claim without an acknowledgement is taken to be in progress, from its
   * making: the publish's own bound (COMMAND_TIMEOUT_MS) and then the acknowledgement's
   * write. The claimant tries to record the acknowledgement until then; a racing request
   * waits for it until then, and publishes the claim itself only after.
   */
  readonly claimLeaseMs: number;
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
    const record = JSON.stringify(mine);
    // Taken before the claim is made, so this process never counts on more lease than the store gave it.
    const leaseEnds = Date.now() + deps.claimLeaseMs;
    const held = await settledClaim(deps.idempotency, ref, { fingerprint: digest, record }, deps.claimLeaseMs);
    const accepted = JSON.parse(held.record) as AcceptedCommand<Answer['response']>;
    // Acknowledged before: the command is on its topic, and a retry must not add a copy.
    if (held.ack !== undefined) return answerOf(accepted);
    // A send that lands after this request was answered 503 is recorded all the same: a
    // retry with the key would otherwise publish the command a second time beside it.
    const lateAck = (late: PublishAck) =>
      void recordAck(deps.idempotency, { ref, digest, value: JSON.stringify(late), leaseEnds: Date.now() + deps.claimLeaseMs }, deps.onAckNotRecorded);
    const ack = await deps.publisher.publish({ ...accepted.publish, onLateAck: lateAck });
    // Publishing another's lapsed claim, this request holds no lease that racers would
    // honour (they judge the claim by its own age), so one try at the record is enough.
    const lease = held.record === record ? leaseEnds : 0;
    await recordAck(deps.idempotency, { ref, digest, value: JSON.stringify(ack), leaseEnds: lease }, deps.onAckNotRecorded);
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
