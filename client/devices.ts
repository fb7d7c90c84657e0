import type { EnrollmentAccepted, EnrollmentRequest } from '../src/generated/schema-types.js';
import { isRecord, unexpectedShape, type ApiRequest, type CallOptions, type Send } from './transport.js';

export interface EnrollOptions extends CallOptions {
  /**
   * Identifies this enrollment across retries: the gateway answers a repeat with the
   * same key and body with the same enrollment_id. A random UUID when not given; pass
   * your own to make a retry of your own (after a crash, say) land on the same enrollment.
   */
  readonly idempotencyKey?: string;
}

export interface DevicesApi {
  /** Enrolls a device into its fleet's integration namespace; resolves with the queued enrollment. */
  enroll(projectId: string, fleetId: string, deviceId: string, body?: EnrollmentRequest, options?: EnrollOptions): Promise<EnrollmentAccepted>;
}

export function createDevicesApi(send: Send): DevicesApi {
  return {
    async enroll(projectId, fleetId, deviceId, body = {}, options = {}) {
      const { idempotencyKey = globalThis.crypto.randomUUID(), ...callOptions } = options;
      const request: ApiRequest = {
        method: 'POST',
        path: `/projects/${encodeURIComponent(projectId)}/fleets/${encodeURIComponent(fleetId)}/devices/${encodeURIComponent(deviceId)}/enroll`,
        body,
        // The key is fixed here, once per call, so every try of this call carries the same one.
        headers: { 'idempotency-key': idempotencyKey },
        // With the key, a repeat of an enrollment that went through answers the recorded
        // one (docs/decisions/idempotency.md), so even a lost answer is safe to ask again.
        retryOnNetworkError: true,
      };
      const answer = await send(request, callOptions);
      if (!isRecord(answer.data) || typeof answer.data['enrollment_id'] !== 'string') throw unexpectedShape(answer, request, 'not an enrollment');
      return answer.data as unknown as EnrollmentAccepted;
    },
  };
}
