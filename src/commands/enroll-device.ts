import { AppError } from '../errors/app-error.js';
import type { DevicePath, EnrollmentAccepted, EnrollmentCommand, EnrollmentRequest } from '../generated/schema-types.js';
import { commandHeaders, type CommandContext, type CommandEnvironment } from './command-context.js';
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

/** Builds the command and the answer for one accepted enrollment. */
export function buildEnrollment(input: EnrollInput, topic: string, env: CommandEnvironment): AcceptedEnrollment {
  const { context, path, body, idempotencyKey } = input;
  const enrollmentId = env.newId();
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

const keyReused = () =>
  new AppError('IDEMPOTENCY_KEY_REUSED', 'Idempotency-Key reused', {
    detail: 'This Idempotency-Key was already used with a different request.',
  });

/**
 * Enrolls a device. With an Idempotency-Key, the accepted command is recorded before it
 * is published, and a retry republishes that same command (same id, same time) and
 * answers as before: a crash anywhere in between loses nothing, and the copy a retry may
 * add carries the command_id that consumers and the feed fold (docs/decisions/idempotency.md).
 *
 * Requests with one key that overlap in this process share one flight: one command, one
 * answer. Across processes, each re-reads the key after recording it and publishes the
 * first record, so gateways agree as soon as the records are visible to each other.
 */
export function createEnrollDevice(deps: {
  publisher: CommandPublisher;
  idempotency: IdempotencyStore;
  topic: string;
  env: CommandEnvironment;
}): EnrollDevice {
  const inFlight = new Map<string, { readonly digest: string; readonly answer: Promise<EnrollmentAccepted> }>();

  async function enrollOnce(input: EnrollInput, ref: IdempotencyKeyRef, digest: string): Promise<EnrollmentAccepted> {
    let first = await deps.idempotency.find(ref);
    if (first === undefined) {
      await deps.idempotency.save(ref, { fingerprint: digest, record: JSON.stringify(buildEnrollment(input, deps.topic, deps.env)) });
      first = await deps.idempotency.find(ref);
      if (first === undefined) throw new Error('an idempotency record just saved is not found');
    }
    if (first.fingerprint !== digest) throw keyReused();
    const accepted = JSON.parse(first.record) as AcceptedEnrollment;
    await deps.publisher.publish(accepted.publish);
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
