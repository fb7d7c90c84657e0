import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { AppError } from '../../../src/errors/app-error.js';
import { answerClientError, toErrorResponse } from '../../../src/http/error-response.js';

describe('error response mapping', () => {
  it('lists fields as the message of a validation failure', () => {
    const res = toErrorResponse(new AppError('VALIDATION_FAILED', 'Request validation failed', { fields: { 'query.limit': 'must be integer' }, detail: 'query.limit must be integer' }));
    expect(res).to.deep.equal({ status: 400, body: { ok: 0, message: { 'query.limit': 'must be integer' }, detail: 'query.limit must be integer' }, headers: {} });
  });

  it('adds WWW-Authenticate to a 401 and Retry-After to a 503', () => {
    expect(toErrorResponse(new AppError('UNAUTHENTICATED', 'Unauthorized')).headers).to.have.property('WWW-Authenticate');
    expect(toErrorResponse(new AppError('UPSTREAM_UNAVAILABLE', 'down')).headers).to.deep.equal({ 'Retry-After': '1' });
  });

  it('maps body-parser errors by their type', () => {
    expect(toErrorResponse(Object.assign(new Error('too big'), { type: 'entity.too.large', status: 413 })).status).to.equal(413);
    expect(toErrorResponse(Object.assign(new SyntaxError('Unexpected token'), { status: 400 })).body.message).to.equal('Malformed JSON');
    expect(toErrorResponse(Object.assign(new Error('x'), { type: 'encoding.unsupported' })).status).to.equal(415);
  });

  it('sends a rate-limited request its Retry-After in whole seconds', () => {
    const res = toErrorResponse(new AppError('RATE_LIMITED', 'Too many requests', { retryAfterSeconds: 3 }));
    expect(res.status).to.equal(429);
    expect(res.headers).to.deep.equal({ 'Retry-After': '3' });
  });

  // Found by the fuzz suite: a br body that is not brotli answered 500.
  it('maps a brotli body that does not decode to 400', () => {
    const res = toErrorResponse(Object.assign(new Error('Decompression failed'), { code: 'ERR__ERROR_FORMAT_PADDING_1', errno: -14 }));
    expect(res.status).to.equal(400);
    expect(res.body.message).to.equal('Undecodable body');
  });

  describe('answers on the bare socket', () => {
    function answered(code: string | undefined, inFlight?: { headersSent: boolean }): string {
      let written = '';
      const socket = Object.assign(new PassThrough(), inFlight === undefined ? {} : { _httpMessage: inFlight });
      socket.end = ((chunk: string) => {
        written = chunk;
        return socket;
      }) as typeof socket.end;
      socket.destroy = (() => {
        written = 'destroyed';
        return socket;
      }) as typeof socket.destroy;
      answerClientError(Object.assign(new Error('x'), code === undefined ? {} : { code }), socket);
      return written;
    }

    for (const [code, status] of [['HPE_HEADER_OVERFLOW', 431], ['ERR_HTTP_REQUEST_TIMEOUT', 408], ['HPE_CHUNK_EXTENSIONS_OVERFLOW', 413], ['HPE_INVALID_METHOD', 400], [undefined, 400]] as const) {
      it(`answers ${String(code)} with ${status} in the envelope`, () => {
        const text = answered(code);
        expect(text).to.match(new RegExp(`^HTTP/1\\.1 ${status} `));
        const body: unknown = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));
        expect(body).to.include({ ok: 0 });
      });
    }

    it('cuts the connection instead when an answer on it has already begun', () => {
      expect(answered('ERR_HTTP_REQUEST_TIMEOUT', { headersSent: true })).to.equal('destroyed');
      expect(answered('ERR_HTTP_REQUEST_TIMEOUT', { headersSent: false })).to.match(/^HTTP\/1\.1 408 /);
    });
  });

  it('answers anything else with a 500 that reveals nothing', () => {
    const res = toErrorResponse(new Error('SELECT * FROM secrets failed at /srv/app.ts:12'));
    expect(res).to.deep.equal({ status: 500, body: { ok: 0, message: 'Internal error', detail: 'Internal error.' }, headers: {} });
  });
});
