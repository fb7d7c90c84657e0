/**
 * A steady producer for the freshness measure: events whose occurred_at is the moment they
 * are handed to kafkajs, sent at `perSecond` for `seconds`, in small batches every 10 ms,
 * as a busy fleet sends them. The delay to visible is then read from the table as
 * ingested_at minus occurred_at (one machine, one clock).
 */
import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import { telemetry } from './bench-events.js';

const TICK_MS = 10;
const MAX_IN_FLIGHT = 64;
/**
 * Most events in one send: after a pause of the event loop a tick owes many events, and one
 * send of them all could exceed the broker's largest batch (message.max.bytes, 1 MiB).
 */
const MAX_SEND = 500;

/** Sends `count` events now, occurred_at set to the moment of sending. */
function fresh(count: number, orgId: string, projectId: string) {
  const now = new Date().toISOString();
  return telemetry(count, orgId, projectId).map((e) => ({ key: e.device_id ?? null, value: JSON.stringify({ ...e, occurred_at: now }) }));
}

/** Produces at a steady rate; resolves with how many events were sent, once every send is acknowledged. */
export async function producePaced(kafka: Kafka, topic: string, options: { readonly perSecond: number; readonly seconds: number; readonly orgId: string; readonly projectId: string }): Promise<number> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  const inFlight = new Set<Promise<unknown>>();
  let sent = 0;
  let failure: Error | undefined;
  try {
    const started = performance.now();
    const end = started + options.seconds * 1000;
    // Events the rate asks for by now and not yet sent.
    const owed = () => Math.floor(((performance.now() - started) / 1000) * options.perSecond) - sent;
    while (performance.now() < end) {
      const due = Math.min(MAX_SEND, owed());
      if (due > 0) {
        const send = producer.send({ topic, acks: -1, messages: fresh(due, options.orgId, options.projectId) });
        sent += due;
        inFlight.add(send);
        send.then(
          () => inFlight.delete(send),
          (error: unknown) => (failure ??= error instanceof Error ? error : new Error(String(error))),
        );
        if (inFlight.size >= MAX_IN_FLIGHT) await Promise.race(inFlight);
      }
      if (failure !== undefined) throw failure;
      // Still a whole send behind the rate: the next one goes at once, without the tick's pause.
      if (owed() < MAX_SEND) await new Promise((resolve) => setTimeout(resolve, TICK_MS));
    }
    await Promise.all(inFlight);
    return sent;
  } finally {
    await producer.disconnect();
  }
}

/** A few events of a project of their own, to see that a consumer has joined before the steady load begins. */
export async function produceWarmUp(kafka: Kafka, topic: string, count: number): Promise<void> {
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    await producer.send({ topic, acks: -1, messages: fresh(count, randomUUID(), randomUUID()) });
  } finally {
    await producer.disconnect();
  }
}
