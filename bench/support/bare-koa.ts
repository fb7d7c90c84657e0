/**
 * Bare Koa, run as a process of its own: a JSON body parsed and a small JSON envelope
 * answered. It is the HTTP ceiling every gateway figure is read against, and the proof
 * that the load generator is not what limits a run.
 *   node --import tsx bench/support/bare-koa.ts PORT
 */
import Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? 0);
const app = new Koa();
app.use(bodyParser());
app.use((ctx) => {
  ctx.status = ctx.method === 'GET' ? 200 : 202;
  ctx.body = { ok: 1, data: { echo: ctx.request.body ?? null }, meta: null };
});
// eslint-disable-next-line @typescript-eslint/no-misused-promises -- Koa's handler catches its own rejections (it answers 500 and emits 'error').
createServer(app.callback()).listen(port, '127.0.0.1', () => console.log('ready'));
