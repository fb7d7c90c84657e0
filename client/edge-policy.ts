import type { EdgePolicyAccepted, EdgePolicyPatch } from '../src/generated/schema-types.js';
import { isRecord, unexpectedShape, type ApiRequest, type CallOptions, type Send } from './transport.js';

export interface EdgePolicyApi {
  /** Applies `patch` to the fleet's edge policy as a JSON Merge Patch (RFC 7386); resolves with the accepted command. */
  patch(projectId: string, fleetId: string, patch: EdgePolicyPatch, options?: CallOptions): Promise<EdgePolicyAccepted>;
}

export function createEdgePolicyApi(send: Send): EdgePolicyApi {
  return {
    async patch(projectId, fleetId, patch, options) {
      const request: ApiRequest = {
        method: 'PATCH',
        path: `/projects/${encodeURIComponent(projectId)}/fleets/${encodeURIComponent(fleetId)}/edge/policy`,
        body: patch,
        /*
         * The PATCH takes no Idempotency-Key, so a repeat is a second command. It is retried
         * on a 503 or 429 answer and not when no answer came, and the difference is how
         * likely the first try was written:
         * - A 503 says the gateway did not acknowledge. It does not promise nothing was
         *   written: a command whose Kafka batch was already on its way when its 5 s deadline
         *   passed may still land (docs/decisions/kafka-atomicity.md, "Bounded answers"); one
         *   whose deadline passed before sending is dropped, and a 503 for an unreachable
         *   store or key server comes before any write. A 429 is a refusal before any work.
         * - No answer at all covers every outcome, including a 200 lost on the way back, so
         *   a repeat is more often a certain duplicate.
         * A duplicate is tolerable when it does happen: applying one merge patch twice gives
         * the policy it gave once. What it costs is a second command and a second
         * edge/policy/update_queued event in the feed, and, if another writer patched the
         * same fields of this fleet in between, the repeat puts this patch's values back over
         * theirs. A caller to whom that matters sets retry.attempts to 1 and decides itself.
         */
        retryOnNetworkError: false,
      };
      const answer = await send(request, options);
      if (!isRecord(answer.data) || typeof answer.data['command_id'] !== 'string') throw unexpectedShape(answer, request, 'not an accepted edge-policy command');
      return answer.data as unknown as EdgePolicyAccepted;
    },
  };
}
