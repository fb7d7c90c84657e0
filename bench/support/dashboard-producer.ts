/**
 * The live events of the dashboards scenario: `perSecond` events to the events topic,
 * spread over every project in turn and over a few devices of each, each occurred now,
 * sent every 100 ms, until the signal aborts.
 */
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { Dashboard } from './dashboard-clients.js';

const TICK_MS = 100;

/** The page the n-th live event lands in: project n mod projects, then its devices in turn. */
export type LiveTarget = (n: number) => Required<Dashboard>;

export async function produceLive(kafka: Kafka, topic: string, perSecond: number, target: LiveTarget, signal: AbortSignal): Promise<number> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  let sent = 0;
  try {
    const started = performance.now();
    for (let tick = started; !signal.aborted; tick += TICK_MS) {
      // Events the rate asks for by now: a slow send does not lower the rate.
      const due = Math.floor(((performance.now() - started) / 1000) * perSecond) - sent;
      if (due > 0) {
        const now = new Date().toISOString();
        const messages = Array.from({ length: due }, (_, k) => {
          const { orgId, projectId, deviceId } = target(sent + k);
          const event = {
            id: randomUUID(),
            org_id: orgId,
            project_id: projectId,
            domain: 'telemetry',
            entity: 'reading',
            action: 'recorded',
            occurred_at: now,
            device_id: deviceId,
            fleet_id: null,
            payload: { live: true, temperature: 21.5 },
            source_service: 'bench',
          };
          return { key: deviceId, value: JSON.stringify(event) };
        });
        await producer.send({ topic, acks: -1, messages });
        sent += due;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, tick + TICK_MS - performance.now())));
    }
    return sent;
  } finally {
    await producer.disconnect();
  }
}
