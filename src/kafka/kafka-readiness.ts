import type { Admin, Kafka } from 'kafkajs';
import type { ReadinessProbe } from '../readiness.js';

/**
 * Kafka answers when a broker returns the cluster's metadata. One admin client serves
 * every check, and checks that overlap share one request, so a load balancer polling
 * /readyz while the brokers are down does not pile requests up.
 */
export function createKafkaReadiness(kafka: Kafka): ReadinessProbe & { close(): Promise<void> } {
  const admin: Admin = kafka.admin();
  let connected: Promise<void> | undefined;
  let inFlight: Promise<void> | undefined;

  async function describe(): Promise<void> {
    connected ??= admin.connect().catch((error: unknown) => {
      connected = undefined;
      throw error;
    });
    await connected;
    await admin.describeCluster();
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
