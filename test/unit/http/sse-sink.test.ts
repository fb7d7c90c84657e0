import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import type { TailMessage } from '../../../src/feed/tail/live-tail.js';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { createSseSink } from '../../../src/http/sse-sink.js';
import { canonicalEvent } from '../../support/factories.js';

function collect(out: PassThrough): () => string {
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  return () => Buffer.concat(chunks).toString();
}

const message = (id: string, event: CanonicalEvent): TailMessage => ({ id, event, json: JSON.stringify(event) });

describe('SSE sink', () => {
  it('writes retry first, then per event an id and one data line, heartbeats as comments, and ends the body', async () => {
    const out = new PassThrough();
    const text = collect(out);
    const sink = createSseSink(out, 2000);
    const a = canonicalEvent({ payload: { note: 'line one\nline two\r\nthree' } });
    const b = canonicalEvent();
    sink.send([message('AAA', a), message('BBB', b)]);
    sink.heartbeat();
    sink.end();
    await new Promise((resolve) => out.once('end', resolve));
    expect(text()).to.equal(`retry: 2000\n\nid: AAA\ndata: ${JSON.stringify(a)}\n\nid: BBB\ndata: ${JSON.stringify(b)}\n\n: heartbeat\n\n`);
  });

  it('ends a stream the gateway closes with an `event: closing` message holding the error envelope, and no id', async () => {
    const out = new PassThrough();
    const text = collect(out);
    const sink = createSseSink(out, 2000);
    sink.end({ message: 'Client too slow', detail: 'Reconnect with Last-Event-ID.' });
    await new Promise((resolve) => out.once('end', resolve));
    expect(text()).to.equal(`retry: 2000\n\nevent: closing\ndata: ${JSON.stringify({ ok: 0, message: 'Client too slow', detail: 'Reconnect with Last-Event-ID.' })}\n\n`);
  });

  it('counts what the client has not taken, and says when it has room again, or is gone', async () => {
    const out = new PassThrough({ highWaterMark: 16 });
    const sink = createSseSink(out, 2000);
    sink.send([message('AAA', canonicalEvent())]);
    expect(sink.queuedBytes, 'nobody reads').to.be.above(100);
    let drained = false;
    const waiting = sink.drained().then(() => {
      drained = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(drained, 'held back while nobody reads').to.equal(false);
    out.destroy();
    await waiting;
    expect(sink.queuedBytes).to.equal(0);
    sink.heartbeat();
    sink.end();
  });
});
