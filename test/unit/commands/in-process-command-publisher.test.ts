import { expect } from 'chai';
import { Writable } from 'node:stream';
import type { CommandLog } from '../../../src/commands/command-log.js';
import type { PublishRequest } from '../../../src/commands/command-publisher.js';
import { createInProcessCommandPublisher } from '../../../src/commands/in-process-command-publisher.js';
import type { EventIngestor } from '../../../src/ingest/event-ingestor.js';
import { createLogger } from '../../../src/observability/logger.js';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { enrollmentCommand } from '../../support/factories.js';

const silent = createLogger('silent', new Writable({ write: (_chunk, _encoding, done) => done() }));

function request(n: number): PublishRequest {
  const value = enrollmentCommand();
  return { command: { topic: 'enrollments', key: value.device_id, commandId: `${value.command_id}`, value, headers: { 'request-id': `r${n}` } } };
}

/** A command log and an ingestor that record what they were given and in which order, and answer when told to. */
function recorder() {
  const steps: string[] = [];
  const appended: string[][] = [];
  const ingested: string[][] = [];
  let release: (() => void) | undefined;
  let hold = true;
  const log: CommandLog = {
    async append(commands) {
      appended.push(commands.map((c) => c.commandId));
      steps.push(`log ${commands.length}`);
      if (hold) {
        hold = false;
        await new Promise<void>((done) => (release = done));
      }
    },
  };
  const ingestor: EventIngestor = {
    async ingestMessages() {
      throw new Error('not used');
    },
    async ingestEvents(events: readonly CanonicalEvent[]) {
      ingested.push(events.map((e) => e.id));
      steps.push(`events ${events.length}`);
    },
  };
  return { log, ingestor, steps, appended, ingested, release: () => release?.() };
}

describe('in-process command publisher', () => {
  it('writes the commands that arrive during a write together, each batch to the log before its events, and answers each only after both', async () => {
    const r = recorder();
    const publisher = createInProcessCommandPublisher({ log: r.log, ingestor: r.ingestor, logger: silent, isRowRefusal: () => false });
    const requests = Array.from({ length: 5 }, (_, i) => request(i));
    let answered = 0;
    const first = publisher.publish(requests[0]!).then(() => (answered += 1));
    const rest = requests.slice(1).map((q) => publisher.publish(q).then(() => (answered += 1)));
    await new Promise((done) => setImmediate(done));
    expect(answered).to.equal(0);
    r.release();
    await Promise.all([first, ...rest]);
    expect(r.steps).to.deep.equal(['log 1', 'events 1', 'log 4', 'events 4']);
    expect(r.appended.flat()).to.deep.equal(requests.map((q) => q.command.commandId));
    expect(r.ingested.flat()).to.have.length(5);
  });

  it('fails every request of a batch whose write failed, and writes the next batch anew', async () => {
    let failNext = true;
    const log: CommandLog = {
      async append() {
        if (failNext) {
          failNext = false;
          throw new Error('store down');
        }
      },
    };
    const ingestor: EventIngestor = { ingestMessages: () => Promise.reject(new Error('not used')), ingestEvents: async () => undefined };
    const publisher = createInProcessCommandPublisher({ log, ingestor, logger: silent, isRowRefusal: () => false });
    const outcomes = await Promise.allSettled([publisher.publish(request(1))]);
    expect(outcomes[0].status).to.equal('rejected');
    await publisher.publish(request(2));
    await publisher.close();
  });

  it('fails only the request whose row the store refused, when the injected predicate says it was a refusal', async () => {
    class RowRefused extends Error {}
    const outcomesWith = async (isRowRefusal: (error: unknown) => boolean) => {
      const requests = Array.from({ length: 4 }, (_, i) => request(i));
      const poison = requests[2]!.command.commandId;
      let release: (() => void) | undefined;
      let hold = true;
      const log: CommandLog = {
        async append(commands) {
          // The first write is held, so the other three arrive during it and share the next.
          if (hold) {
            hold = false;
            await new Promise<void>((done) => (release = done));
          }
          if (commands.some((c) => c.commandId === poison)) throw new RowRefused('a value the store cannot parse');
        },
      };
      const ingestor: EventIngestor = { ingestMessages: () => Promise.reject(new Error('not used')), ingestEvents: async () => undefined };
      const publisher = createInProcessCommandPublisher({ log, ingestor, logger: silent, isRowRefusal });
      const answers = Promise.allSettled(requests.map((q) => publisher.publish(q)));
      release!();
      const outcomes = (await answers).map((o) => o.status);
      await publisher.close();
      return outcomes;
    };
    expect(await outcomesWith((error) => error instanceof RowRefused)).to.deep.equal(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    // Without the verdict a failed shared write fails every request in it: the store may be down.
    expect(await outcomesWith(() => false)).to.deep.equal(['fulfilled', 'rejected', 'rejected', 'rejected']);
  });
});
