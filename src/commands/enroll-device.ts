import { AppError } from '../errors/app-error.js';
import type { DevicePath, EnrollmentAccepted, EnrollmentCommand, EnrollmentRequest } from '../generated/schema-types.js';
import { commandHeaders, type CommandContext, type CommandEnvironment } from './command-context.js';
import { nameBasedUuid } from './command-event.js';
import type { CommandPublisher, PublishRequest } from './command-publisher.js';
import { fingerprint } from './fingerprint.js';
import type { IdempotencyKeyRef, IdempotencyStore } from './idempotency-store.js';

export interface EnrollInput {
  readonly context: CommandContext;
  readonly path: DevicePath;
  readonly body: EnrollmentRequest;
  readonly idempotencyKey: string | undefined;
}

export type EnrollDevice = (input: EnrollInput) => Promise<EnrollmentAccepted>;

interface AcceptedEnrollment {
  readonly publish: PublishRequest;
  readonly response: EnrollmentAccepted;
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

/** Builds the command and the answer for one accepted enrollment; a fresh id unless one is given. */
export function buildEnrollment(input: EnrollInput, topic: string, env: CommandEnvironment, commandId?: string): AcceptedEnrollment {
  const { context, path, body, idempotencyKey } = input;
  const enrollmentId = commandId ?? env.newId();
  const queuedAt = env.now().toISOString();
  const command: EnrollmentCommand = {
    command_id: enrollmentId,
    type: 'device.enroll',
    schema_version: 1,
    org_id: context.orgId,
    project_id: path.project_id,
    fleet_id: path.fleet_id,
    device_id: path.device_id,
    body,
    requested_at: queuedAt,
    requested_by: context.requestedBy,
    ...(idempotencyKey === undefined ? {} : { idempotency_key: idempotencyKey }),
  };
  return {
    publish: {
      command: {
        topic,
        key: path.device_id,
        commandId: enrollmentId,
        value: command,
        headers: commandHeaders('enrollment-command.schema.json', context, idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }),
      },
    },
    response: { enrollment_id: enrollmentId, status: 'queued', ...path, ...body, queued_at: queuedAt },
  };
}

/** How often a request waiting for another's acknowledgement reads the record again: from the first delay, doubling, up to the last. */
const ACK_POLL_FIRST_MS = 50;
const ACK_POLL_MAX_MS = 400;
/** Delays between tries to record an acknowledgement, doubling up to the last. */
const ACK_WRITE_RETRY_FIRST_MS = 100;
const ACK_WRITE_RETRY_MAX_MS = 1000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const keyReused = () =>
  new AppError('IDEMPOTENCY_KEY_REUSED', 'Idempotency-Key reused', {
    detail: 'This Idempotency-Key was already used with a different request.',
  });

/**
 * Enrolls a device. With an Idempotency-Key, the accepted command is recorded before it
 * is published, and Kafka's acknowledgement (partition, offset) is recorded after. A retry
 * answers as before; it publishes nothing once the acknowledgement is recorded, and only
 * a claim without one (a crash or a 503 between claim and acknowledgement) is published
 * again, as the same command (same id, same time), which consumers and the feed fold
 * (docs/decisions/idempotency.md).
 *
 * Requests with one key that overlap in this process share one flight: one command, one
 * answer. Across processes the idempotency store decides: with Keeper its claim is a
 * compare-and-set and every gateway publishes the one record that won; without, the
 * command id derived from the key makes racing gateways' commands one command.
 */
export function createEnrollDevice(deps: {
  publisher: CommandPublisher;
  idempotency: IdempotencyStore;
  topic: string;
  env: CommandEnvironment;
  /**
   * How long a claim without an acknowledgement is taken to be in progress, from its
   * making: the publish's own bound (COMMAND_TIMEOUT_MS) and then the acknowledgement's
   * write. The claimant tries to record the acknowledgement until then; a racing request
   * waits for it until then, and publishes the claim itself only after.
   */
  claimLeaseMs: number;
  /** Hears of an acknowledgement the idempotency store could not record (for a log line). */
  onAckNotRecorded?: (error: unknown) => void;
}): EnrollDevice {
  const inFlight = new Map<string, { readonly digest: string; readonly answer: Promise<EnrollmentAccepted> }>();

  /**
   * Records the acknowledgement, trying again while the claim's lease lasts: a store
   * that answers slowly for a moment must not make a racing request publish a copy. The
   * command is durable whatever happens here: an acknowledgement never recorded only
   * lets a later retry publish the same command_id again.
   */
  async function acknowledge(ref: IdempotencyKeyRef, digest: string, ack: string, leaseEnds: number): Promise<void> {
    for (let delay = ACK_WRITE_RETRY_FIRST_MS; ; delay = Math.min(delay * 2, ACK_WRITE_RETRY_MAX_MS)) {
      try {
        await deps.idempotency.acknowledge(ref, digest, ack);
        return;
      } catch (error) {
        if (Date.now() + delay >= leaseEnds) {
          deps.onAckNotRecorded?.(error);
          return;
        }
        await sleep(delay);
      }
    }
  }

  async function enrollOnce(input: EnrollInput, ref: IdempotencyKeyRef, digest: string): Promise<EnrollmentAccepted> {
    const mine = buildEnrollment(input, deps.topic, deps.env, keyedCommandId(ref, digest));
    const entry = { fingerprint: digest, record: JSON.stringify(mine) };
    // Taken before the claim is made, so this process never counts on more lease than the store gave it.
    const leaseEnds = Date.now() + deps.claimLeaseMs;
    let first = await deps.idempotency.claim(ref, entry);
    if (first.fingerprint !== digest) throw keyReused();
    // Another request's claim, within its lease: its publish or its acknowledgement may
    // still be under way, so wait for the acknowledgement rather than send a copy beside
    // it. Past the lease that request has answered 503 or died, and its claim is published here.
    const othersInLease = () => first.ack === undefined && first.record !== entry.record && (first.ageMs ?? Infinity) < deps.claimLeaseMs;
    for (let delay = ACK_POLL_FIRST_MS; othersInLease(); delay = Math.min(delay * 2, ACK_POLL_MAX_MS)) {
      await sleep(delay);
      first = await deps.idempotency.claim(ref, entry);
    }
    const accepted = JSON.parse(first.record) as AcceptedEnrollment;
    // Acknowledged before: the command is on its topic, and a retry must not add a copy.
    if (first.ack !== undefined) return accepted.response;
    const ack = await deps.publisher.publish(accepted.publish);
    await acknowledge(ref, digest, JSON.stringify(ack), first.record === entry.record ? leaseEnds : Date.now() + deps.claimLeaseMs);
    return accepted.response;
  }

  return async (input) => {
    if (input.idempotencyKey === undefined) {
      const accepted = buildEnrollment(input, deps.topic, deps.env);
      await deps.publisher.publish(accepted.publish);
      return accepted.response;
    }
    const ref: IdempotencyKeyRef = {
      orgId: input.context.orgId,
      scope: `enroll:${input.path.project_id}:${input.path.fleet_id}:${input.path.device_id}`,
      key: input.idempotencyKey,
    };
    const digest = fingerprint({ path: input.path, body: input.body });
    const flightKey = JSON.stringify([ref.orgId, ref.scope, ref.key]);
    const running = inFlight.get(flightKey);
    if (running !== undefined) {
      if (running.digest !== digest) throw keyReused();
      return running.answer;
    }
    const answer = enrollOnce(input, ref, digest);
    inFlight.set(flightKey, { digest, answer });
    try {
      return await answer;
    } finally {
      inFlight.delete(flightKey);
    }
  };
}
