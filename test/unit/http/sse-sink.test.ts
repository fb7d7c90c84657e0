import { expect } from 'chai';
import { PassThrough } from 'node:stream';
import { createSseSink } from '../../../src/http/sse-sink.js';
import { canonicalEvent } from '../../support/factories.js';

function collect(out: PassThrough): () => string {
  const chunks: Buffer[] = [];
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  return () => Buffer.concat(chunks).toString();
}

describe('SSE sink', () => {
  it('writes retry first, then per event an id and one data line, heartbeats as comments, and ends the body', async () => {
    const out = new PassThrough();
    const text = collect(out);
    const sink = createSseSink(out, 2000);
    const a = canonicalEvent({ payload: { note: 'line one\nline two\r\nthree' } });
    const b = canonicalEvent();
    await sink.events([{ id: 'AAA', event: a }, { id: 'BBB', event: b }]);
    await sink.heartbeat();
    sink.end();
    await new Promise((resolve) => out.once('end', resolve));
    expect(text()).to.equal(`retry: 2000\n\nid: AAA\ndata: ${JSON.stringify(a)}\n\nid: BBB\ndata: ${JSON.stringify(b)}\n\n: heartbeat\n\n`);
  });

  it('waits for room when the client reads slowly, and not once the client is gone', async () => {
    const out = new PassThrough({ highWaterMark: 16 });
    const sink = createSseSink(out, 2000);
    let sent = false;
    const sending = sink.events([{ id: 'AAA', event: canonicalEvent() }]).then(() => {
      sent = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent, 'held back while nobody reads').to.equal(false);
    out.destroy();
    await sending;
    await sink.heartbeat();
    sink.end();
  });
});
