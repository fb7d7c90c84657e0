import { AppError } from '../errors.js';
import type { DevicePath, EnrollmentAccepted, EnrollmentCommand, EnrollmentRequest } from '../generated/schema-types.js';
import { commandHeaders, type CommandContext, type CommandEnvironment } from './command-context.js';
import type { CommandPublisher, PublishRequest } from './command-publisher.js';
import { fingerprint } from './fingerprint.js';
import type { IdempotencyStore } from './idempotency-store.js';

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

/**
 * Enrolls a device. With an Idempotency-Key, the accepted command is recorded before it
 * is published, and a retry republishes that same command (same id, same time) and
 * answers as before: a crash anywhere in between loses nothing, and the copy a retry may
 * add carries the command_id that consumers and the feed fold (docs/decisions/idempotency.md).
 */
export function createEnrollDevice(deps: {
  publisher: CommandPublisher;
  idempotency: IdempotencyStore;
  topic: string;
  env: CommandEnvironment;
}): EnrollDevice {
  return async (input) => {
    if (input.idempotencyKey === undefined) {
      const accepted = buildEnrollment(input, deps.topic, deps.env);
      await deps.publisher.publish(accepted.publish);
      return accepted.response;
    }
    const ref = {
      orgId: input.context.orgId,
      scope: `enroll:${input.path.project_id}:${input.path.fleet_id}:${input.path.device_id}`,
      key: input.idempotencyKey,
    };
    const requestDigest = fingerprint({ path: input.path, body: input.body });
    const previous = await deps.idempotency.find(ref);
    let accepted: AcceptedEnrollment;
    if (previous === undefined) {
      accepted = buildEnrollment(input, deps.topic, deps.env);
      await deps.idempotency.save(ref, { fingerprint: requestDigest, record: JSON.stringify(accepted) });
    } else if (previous.fingerprint !== requestDigest) {
      throw new AppError('IDEMPOTENCY_KEY_REUSED', 'Idempotency-Key reused', {
        detail: 'This Idempotency-Key was already used with a different request.',
      });
    } else {
      accepted = JSON.parse(previous.record) as AcceptedEnrollment;
    }
    await deps.publisher.publish(accepted.publish);
    return accepted.response;
  };
}
