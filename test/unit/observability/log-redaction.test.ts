import { Writable } from 'node:stream';
import { expect } from 'chai';
import { createLogger } from '../../../src/observability/logger.js';
import { fieldCensor } from '../../../src/observability/redact.js';

/** A logger whose lines are kept, parsed, in `lines`. */
function capturedLogger() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split('\n')) if (text !== '') lines.push(JSON.parse(text) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger('info', sink), lines };
}

describe('log redaction', () => {
  it('censors a secret field at the top of a line and one and two levels down', () => {
    const { logger, lines } = capturedLogger();
    logger.info({ token: 't0', request: { authorization: 'Bearer t1', headers: { cookie: 'c2', accept: 'json' } }, keep: 'me' }, 'line');
    expect(lines[0]).to.deep.include({ token: '[redacted]', keep: 'me' });
    expect(lines[0]!['request']).to.deep.equal({ authorization: '[redacted]', headers: { cookie: '[redacted]', accept: 'json' } });
  });

  it('censors bodies and payloads inside arrays, and bindings of a child logger', () => {
    const { logger, lines } = capturedLogger();
    logger.child({ secret: 's' }).info({ events: [{ id: 'e1', payload: { reading: 1 } }] }, 'line');
    expect(lines[0]).to.deep.include({ secret: '[redacted]' });
    expect(lines[0]!['events']).to.deep.equal([{ id: 'e1', payload: '[redacted]' }]);
  });

  it('leaves the logged objects as they were', () => {
    const { logger } = capturedLogger();
    const line = { request: { body: { password: 'p' } } };
    logger.info(line, 'line');
    expect(line).to.deep.equal({ request: { body: { password: 'p' } } });
  });

  it('keeps an error an error, with its message and stack, when it censors a field of it', () => {
    const { logger, lines } = capturedLogger();
    const err = Object.assign(new Error('refused'), { token: 'kept out', code: 'E_REFUSED' });
    logger.warn({ err }, 'failed');
    const logged = lines[0]!['err'] as Record<string, unknown>;
    expect(logged).to.include({ message: 'refused', type: 'Error', token: '[redacted]', code: 'E_REFUSED' });
    expect(logged['stack']).to.be.a('string').that.includes('refused');
    expect(err.token).to.equal('kept out');
  });

  it('goes no deeper than asked', () => {
    const censor = fieldCensor(['token'], 1, 'x');
    expect(censor({ a: { token: 1, b: { token: 2 } } })).to.deep.equal({ a: { token: 'x', b: { token: 2 } } });
  });

  it('returns the same object when there is nothing to censor', () => {
    const line = { a: { b: { c: 1 } }, list: [1, 2] };
    expect(fieldCensor(['token'], 2, 'x')(line)).to.equal(line);
  });
});
