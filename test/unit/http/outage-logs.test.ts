import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import Router from '@koa/router';
import { expect } from 'chai';
import Koa from 'koa';
import { AppError } from '../../../src/errors/app-error.js';
import { errorHandler } from '../../../src/http/error-response.js';
import { capturedLogger } from '../../support/captured-logger.js';

/**
 * The error handler during an outage: a dependency that is down answers every request of a
 * route with a 503, /readyz's too, and the log says so once, not once a request with a stack.
 */
describe('requests answered 503 while a dependency is down', () => {
  const { logger, lines } = capturedLogger('info');
  let down = true;
  let server: Server;
  let base: string;

  before(async () => {
    const app = new Koa();
    const router = new Router();
    router.get('/readyz', (ctx) => {
      if (down) throw new AppError('UPSTREAM_UNAVAILABLE', 'Not ready', { detail: 'Not ready: store is not reachable.' });
      ctx.body = { ok: 1 };
    });
    router.get('/boom', () => {
      throw new Error('a bug');
    });
    app.use(errorHandler(logger));
    app.use(router.routes());
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => new Promise((resolve) => server.close(resolve)));

  it('logs one warning without a stack when a route starts answering 503, none for the repeats, and one line when it answers again', async () => {
    for (let i = 0; i < 50; i += 1) expect((await fetch(`${base}/readyz`)).status).to.equal(503);
    down = false;
    expect((await fetch(`${base}/readyz`)).status).to.equal(200);
    expect((await fetch(`${base}/readyz`)).status).to.equal(200);
    expect(lines.map((l) => [l['level'], l['msg']])).to.deep.equal([
      [40, '/readyz answered 503: a dependency is unavailable: began; retrying'],
      [30, '/readyz answered 503: a dependency is unavailable: ended'],
    ]);
    expect(lines[0]).to.include({ cause: 'Not ready', path: '/readyz' });
    expect(lines[0]).to.not.have.any.keys('err', 'stack');
    expect(lines[1]).to.include({ occurrences: 50, status: 200 });
  });

  it('still logs an internal failure as an error with its stack, each time', async () => {
    const before = lines.length;
    for (let i = 0; i < 2; i += 1) expect((await fetch(`${base}/boom`)).status).to.equal(500);
    const failed = lines.slice(before);
    expect(failed.map((l) => [l['level'], l['msg']])).to.deep.equal([
      [50, 'request failed'],
      [50, 'request failed'],
    ]);
    expect((failed[0]!['err'] as { stack?: string }).stack).to.include('a bug');
  });
});
