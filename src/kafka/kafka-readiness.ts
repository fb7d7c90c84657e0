import type { Admin } from 'kafkajs';
import type { KafkaConfig } from './kafka-settings.js';
import type { Logger } from '../observability/logger.js';
import { NotReady, type ReadinessProbe } from '../observability/readiness.js';
import { ONE_ATTEMPT, createKafkaClient } from './kafka-client.js';
import { kafkaRefusal } from './kafka-errors.js';

/**
 * Kafka answers when a broker returns the cluster's metadata. One admin client serves
 * every check, and checks that overlap share one request, so a load balancer polling
 * /readyz while the brokers are down does not pile requests up. A check makes one attempt
 * (the next poll is the retry), so a refusal by the brokers (credentials, certificate,
 * host name, ACLs) is reported as what it is within the probe's deadline.
 */
export function createKafkaReadiness(config: KafkaConfig, logger: Logger): ReadinessProbe & { close(): Promise<void> } {
  const admin: Admin = createKafkaClient(config, logger, ONE_ATTEMPT).admin();
  let connected: Promise<void> | undefined;
  let inFlight: Promise<void> | undefined;

  async function describe(): Promise<void> {
    connected ??= admin.connect().catch((error: unknown) => {
      connected = undefined;
      throw error;
    });
    try {
      await connected;
      await admin.describeCluster();
    } catch (error) {
      // kafkajs swallows a failed reconnect inside describeCluster (it then fails on an empty
      // answer), so the next check starts from a fresh connect, which says why it failed.
      connected = undefined;
      await admin.disconnect().catch(() => undefined);
      const refusal = kafkaRefusal(error, config);
      if (refusal !== undefined) throw new NotReady(refusal, { cause: error });
      throw error;
    }
  }

  return {
    name: 'kafka',
    check() {
      inFlight ??= describe().finally(() => {
        inFlight = undefined;
      });
      return inFlight;
    },
    async close() {
      await admin.disconnect().catch(() => undefined);
    },
  };
}
