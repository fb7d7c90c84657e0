import { expect } from 'chai';
import type { CommandPublisher, PublishRequest } from '../../../src/commands/command-publisher.js';
import { enrollment } from '../../../src/commands/catalogue/enrollment.js';
import type { CommandEnvironment } from '../../../src/commands/command-context.js';
import { acceptCommand, createCommandHandler, keyedCommandId, type CommandHandlerDependencies, type InputOf } from '../../../src/commands/command-handler.js';
import { fingerprint } from '../../../src/commands/fingerprint.js';
import type { IdempotencyEntry, IdempotencyStore } from '../../../src/commands/idempotency-store.js';
import { AppError } from '../../../src/errors/app-error.js';
import { createSchemaRegistry } from '../../../src/schemas/schema-registry.js';
import { uuid } from '../../support/factories.js';
import { appErrorOf } from '../../support/rejections.js';
import { waitFor } from '../../support/wait-for.js';

const schemas = createSchemaRegistry();

type EnrollInput = InputOf<typeof enrollment>;

/** The generic command handler, for the enrollment entry: the command with an Idempotency-Key. */
function createEnrollDevice(deps: CommandHandlerDependencies) {
  const handle = createCommandHandler(enrollment, deps);
  return async (input: EnrollInput) => (await handle(input)).response;
}

const buildEnrollment = (input: EnrollInput, topic: string, env: CommandEnvironment, commandId?: string) => acceptCommand(enrollment, input, topic, env, commandId);

/** An in-memory idempotency store with a compare-and-set: the first entry claimed for a key holds, as in KeeperMap. */
function memoryIdempotency(options: { failAcks?: boolean; failFirstAcks?: number } = {}): IdempotencyStore & { readonly saves: number; readonly acks: string[] } {
  const entries = new Map<string, IdempotencyEntry>();
  const acks: string[] = [];
  let saves = 0;
  let ackFailuresLeft = options.failFirstAcks ?? 0;
  return {
    compareAndSet: true,
    acks,
    get saves() {
      return saves;
    },
    async claim(ref, entry) {
      saves += 1;
      const key = `${ref.orgId}|${ref.scope}|${ref.key}`;
      if (!entries.has(key)) entries.set(key, entry);
      return entries.get(key)!;
    },
    async acknowledge(ref, fingerprint, ack) {
      if (options.failAcks === true) throw new Error('store down');
      if (ackFailuresLeft > 0) {
        ackFailuresLeft -= 1;
        throw new Error('store slow for a moment');
      }
      const key = `${ref.orgId}|${ref.scope}|${ref.key}`;
      const held = entries.get(key)!;
      if (held.fingerprint === fingerprint) entries.set(key, { ...held, ack });
      acks.push(ack);
    },
  };
}

/** In-memory stand-ins for our own ports; Kafka and ClickHouse are exercised in test/integration. */
function fakes(options: { failPublishes?: number; idempotency?: IdempotencyStore } = {}) {
  const published: PublishRequest[] = [];
  let failures = options.failPublishes ?? 0;
  const publisher: CommandPublisher = {
    async publish(request) {
      if (failures > 0) {
        failures -= 1;
        throw new AppError('UPSTREAM_UNAVAILABLE', 'broker down');
      }
      published.push(request);
      return { partition: 3, offset: String(published.length - 1) };
    },
    async close() {},
  };
  const idempotency = options.idempotency ?? memoryIdempotency();
  let clock = Date.parse('2026-06-01T12:00:00Z');
  const env = { now: () => new Date((clock += 1000)), newId: uuid };
  return { published, enroll: createEnrollDevice({ publisher, idempotency, topic: 'enroll.topic', env, claimLeaseMs: 0 }) };
}

function input(overrides: Partial<EnrollInput> = {}): EnrollInput {
  return {
    context: { orgId: uuid(), requestedBy: 'alice', trace: undefined, requestId: 'req-1' },
    path: { project_id: uuid(), fleet_id: uuid(), device_id: uuid() },
    body: { display_name: 'Pump' },
    idempotencyKey: undefined,
    ...overrides,
  };
}

describe('command handler (the enrollment entry)', () => {
  it('publishes a schema-valid command keyed by device_id, and nothing else', async () => {
    const { published, enroll } = fakes();
    const req = input({ idempotencyKey: 'k1' });
    const accepted = await enroll(req);
    expect(published).to.have.length(1);
    const { command } = published[0]!;
    // With an Idempotency-Key, the request also hears of a send that lands after its deadline.
    expect(Object.keys(published[0]!)).to.deep.equal(['command', 'onLateAck']);
    expect(command).to.deep.include({ topic: 'enroll.topic', key: req.path.device_id, commandId: accepted.enrollment_id });
    expect(command.headers).to.deep.equal({
      'content-type': 'application/json',
      schema: 'enrollment-command.schema.json',
      'schema-version': '1',
      'idempotency-key': 'k1',
      'request-id': 'req-1',
    });
    expect(schemas.check('enrollment-command.schema.json', command.value).ok).to.equal(true);
    expect(command.value).to.deep.include({ org_id: req.context.orgId, requested_by: 'alice', idempotency_key: 'k1', requested_at: accepted.queued_at });
  });

  it('carries the request trace in the command traceparent header', async () => {
    const { published, enroll } = fakes();
    await enroll(input({ context: { orgId: uuid(), requestedBy: 'alice', trace: { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' }, requestId: 'req-1' } }));
    expect(published[0]!.command.headers['traceparent']).to.equal('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
  });

  it('republishes the very same command for a retry whose claim has no acknowledgement, and answers the same', async () => {
    const { published, enroll } = fakes({ idempotency: memoryIdempotency({ failAcks: true }) });
    const req = input({ idempotencyKey: 'k' });
    const first = await enroll(req);
    const second = await enroll(req);
    expect(second).to.deep.equal(first);
    expect(published).to.have.length(2);
    expect(published[1]!.command).to.deep.equal(published[0]!.command);
  });

  it('lets a retry deliver a command whose first publish failed after it was recorded', async () => {
    const { published, enroll } = fakes({ failPublishes: 1 });
    const req = input({ idempotencyKey: 'k' });
    let error: unknown;
    await enroll(req).catch((e: unknown) => (error = e));
    expect((error as AppError).code).to.equal('UPSTREAM_UNAVAILABLE');
    const accepted = await enroll(req);
    expect(published).to.have.length(1);
    expect(published[0]!.command.commandId).to.equal(accepted.enrollment_id);
  });

  it('refuses a key reused for a different body', async () => {
    const { enroll } = fakes();
    const req = input({ idempotencyKey: 'k' });
    await enroll(req);
    let error: unknown;
    await enroll({ ...req, body: { display_name: 'Other' } }).catch((e: unknown) => (error = e));
    expect((error as AppError).code).to.equal('IDEMPOTENCY_KEY_REUSED');
    expect((error as AppError).status).to.equal(422);
  });

  it('makes a new enrollment for every request without a key', async () => {
    const { enroll } = fakes();
    const req = input();
    expect((await enroll(req)).enrollment_id).to.not.equal((await enroll(req)).enrollment_id);
  });

  it('gives requests with one key that overlap in the process one command and one answer', async () => {
    const idempotency = memoryIdempotency();
    const { published, enroll } = fakes({ idempotency });
    const req = input({ idempotencyKey: 'same-moment' });
    const answers = await Promise.all(Array.from({ length: 8 }, () => enroll(req)));
    expect(new Set(answers.map((a) => a.enrollment_id)).size).to.equal(1);
    expect(published).to.have.length(1);
    expect(idempotency.saves).to.equal(1);
  });

  it('refuses an overlapping request that reuses the key for a different body', async () => {
    const { published, enroll } = fakes();
    const req = input({ idempotencyKey: 'k' });
    const [first, second] = await Promise.allSettled([enroll(req), enroll({ ...req, body: { display_name: 'Other' } })]);
    expect(first.status).to.equal('fulfilled');
    expect(second.status === 'rejected' && (second.reason as AppError).code).to.equal('IDEMPOTENCY_KEY_REUSED');
    expect(published).to.have.length(1);
  });

  it('gives two gateways that each see only their own record one command id (no compare-and-set)', async () => {
    // The worst race without Keeper: every claim returns the entry it was given.
    const blind: IdempotencyStore = { compareAndSet: false, claim: async (_ref, entry) => entry, acknowledge: async () => undefined };
    const gatewayA = fakes({ idempotency: blind });
    const gatewayB = fakes({ idempotency: blind });
    const req = input({ idempotencyKey: 'across' });
    const [a, b] = await Promise.all([gatewayA.enroll(req), gatewayB.enroll(req)]);
    expect(a.enrollment_id).to.equal(b.enrollment_id);
    expect(gatewayA.published[0]!.command.commandId).to.equal(gatewayB.published[0]!.command.commandId);
  });

  it('derives the command id from the organization, scope, key and request', () => {
    const ref = { orgId: uuid(), scope: 'enroll:p:f:d', key: 'k' };
    expect(keyedCommandId(ref, 'digest-1')).to.equal(keyedCommandId({ ...ref }, 'digest-1'));
    expect(keyedCommandId(ref, 'digest-1')).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    for (const other of [{ ...ref, orgId: uuid() }, { ...ref, scope: 'enroll:p:f:e' }, { ...ref, key: 'k2' }]) {
      expect(keyedCommandId(other, 'digest-1')).to.not.equal(keyedCommandId(ref, 'digest-1'));
    }
    expect(keyedCommandId(ref, 'digest-2')).to.not.equal(keyedCommandId(ref, 'digest-1'));
  });

  describe('acknowledged commands', () => {
    it('publishes once across retries after the acknowledgement, and records partition and offset', async () => {
      const idempotency = memoryIdempotency();
      const { published, enroll } = fakes({ idempotency });
      const req = input({ idempotencyKey: 'acked' });
      const answers = [await enroll(req), await enroll(req), await enroll(req)];
      expect(published).to.have.length(1);
      expect(new Set(answers.map((a) => JSON.stringify(a))).size).to.equal(1);
      expect(idempotency.acks).to.deep.equal([JSON.stringify({ partition: 3, offset: '0' })]);
    });

    it('publishes the claimed command again when the claim has no acknowledgement (the crash window)', async () => {
      const idempotency = memoryIdempotency();
      const { published, enroll } = fakes({ idempotency, failPublishes: 1 });
      const req = input({ idempotencyKey: 'unacked' });
      expect((await enroll(req).catch((e: AppError) => e)) instanceof AppError).to.equal(true);
      const answer = await enroll(req);
      await enroll(req);
      expect(published).to.have.length(1);
      expect(published[0]!.command.commandId).to.equal(answer.enrollment_id);
    });

    it('waits for the acknowledgement of another gateway\'s young claim instead of publishing beside it', async () => {
      const store = memoryIdempotency();
      // Claims from the shared store look a moment old, as a racing gateway's would.
      const shared: IdempotencyStore = { ...store, claim: async (ref, entry) => ({ ...(await store.claim(ref, entry)), ageMs: 10 }), acknowledge: (ref, fp, ack) => store.acknowledge(ref, fp, ack) };
      let release: () => void = () => undefined;
      const slow: PublishRequest[] = [];
      const slowPublisher: CommandPublisher = {
        async publish(request) {
          await new Promise<void>((resolve) => (release = resolve));
          slow.push(request);
          return { partition: 0, offset: '7' };
        },
        async close() {},
      };
      const env = { now: () => new Date(), newId: uuid };
      const gatewayA = createEnrollDevice({ publisher: slowPublisher, idempotency: shared, topic: 't', env, claimLeaseMs: 60_000 });
      const gatewayB = fakes({ idempotency: shared });
      const req = input({ idempotencyKey: 'raced' });
      const a = gatewayA(req);
      await new Promise((resolve) => setTimeout(resolve, 20));
      const b = createEnrollDevice({ publisher: { publish: async (r) => (gatewayB.published.push(r), { partition: 0, offset: '8' }), close: async () => undefined }, idempotency: shared, topic: 't', env, claimLeaseMs: 60_000 })(req);
      await new Promise((resolve) => setTimeout(resolve, 120));
      release();
      const [answerA, answerB] = await Promise.all([a, b]);
      expect(answerB).to.deep.equal(answerA);
      expect(slow).to.have.length(1);
      expect(gatewayB.published).to.have.length(0);
    });

    it('keeps trying to record the acknowledgement while the claim\'s lease lasts, so a later retry publishes nothing', async () => {
      const idempotency = memoryIdempotency({ failFirstAcks: 2 });
      const notRecorded: unknown[] = [];
      const published: PublishRequest[] = [];
      const publisher: CommandPublisher = { publish: async (r) => (published.push(r), { partition: 1, offset: '4' }), close: async () => undefined };
      const env = { now: () => new Date(), newId: uuid };
      const enroll = createEnrollDevice({ publisher, idempotency, topic: 't', env, claimLeaseMs: 60_000, onAckNotRecorded: (e) => notRecorded.push(e) });
      const req = input({ idempotencyKey: 'slow-store' });
      await enroll(req);
      await enroll(req);
      expect(idempotency.acks).to.deep.equal([JSON.stringify({ partition: 1, offset: '4' })]);
      expect(notRecorded).to.deep.equal([]);
      expect(published).to.have.length(1);
    });

    // Found in review: a send still retrying when its request was answered 503 landed later, unrecorded, and the retry with the key published a second copy.
    it('records the acknowledgement of a send that lands after its request was answered 503, so the retry publishes nothing', async () => {
      const idempotency = memoryIdempotency();
      const published: PublishRequest[] = [];
      let landLate: (() => void) | undefined;
      const publisher: CommandPublisher = {
        async publish(r) {
          published.push(r);
          if (published.length === 1) {
            landLate = () => r.onLateAck?.({ partition: 3, offset: '17' });
            throw new AppError('UPSTREAM_UNAVAILABLE', 'Kafka did not acknowledge in time');
          }
          return { partition: 3, offset: '18' };
        },
        close: async () => undefined,
      };
      const env = { now: () => new Date(), newId: uuid };
      const enroll = createEnrollDevice({ publisher, idempotency, topic: 't', env, claimLeaseMs: 0 });
      const req = input({ idempotencyKey: 'late' });
      expect((await appErrorOf(enroll(req))).code).to.equal('UPSTREAM_UNAVAILABLE');
      landLate!();
      await waitFor('the late acknowledgement recorded', async () => (idempotency.acks.length === 1 ? true : undefined));
      const answer = await enroll(req);
      expect(answer.status).to.equal('queued');
      expect(published, 'the retry found the acknowledgement and published nothing').to.have.length(1);
      expect(idempotency.acks).to.deep.equal([JSON.stringify({ partition: 3, offset: '17' })]);
    });

    it('gives up recording the acknowledgement when the lease ends, and says so once', async () => {
      const notRecorded: unknown[] = [];
      const publisher: CommandPublisher = { publish: async () => ({ partition: 1, offset: '4' }), close: async () => undefined };
      const env = { now: () => new Date(), newId: uuid };
      const idempotency = memoryIdempotency({ failAcks: true });
      const enroll = createEnrollDevice({ publisher, idempotency, topic: 't', env, claimLeaseMs: 300, onAckNotRecorded: (e) => notRecorded.push(e) });
      const answer = await enroll(input({ idempotencyKey: 'store-down' }));
      expect(answer.status).to.equal('queued');
      expect(notRecorded).to.have.length(1);
    });

    it('publishes another gateway\'s claim once it is older than the publish window without an acknowledgement', async () => {
      const store = memoryIdempotency();
      const shared: IdempotencyStore = { ...store, claim: async (ref, entry) => ({ ...(await store.claim(ref, entry)), ageMs: 5_000 }), acknowledge: (ref, fp, ack) => store.acknowledge(ref, fp, ack) };
      const env = { now: () => new Date(), newId: uuid };
      const req = input({ idempotencyKey: 'abandoned' });
      const published: PublishRequest[] = [];
      const publisher: CommandPublisher = { publish: async (r) => (published.push(r), { partition: 0, offset: '1' }), close: async () => undefined };
      // A claim left by a request that died before publishing.
      await store.claim({ orgId: req.context.orgId, scope: `enroll:${req.path.project_id}:${req.path.fleet_id}:${req.path.device_id}`, key: 'abandoned' }, {
        fingerprint: fingerprint({ path: req.path, body: req.body }),
        record: JSON.stringify(buildEnrollment(req, 't', env, 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa')),
      });
      const answer = await createEnrollDevice({ publisher, idempotency: shared, topic: 't', env, claimLeaseMs: 1000 })(req);
      expect(answer.enrollment_id).to.equal('aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa');
      expect(published.map((p) => p.command.commandId)).to.deep.equal(['aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa']);
    });
  });
});
