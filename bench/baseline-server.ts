import Koa from 'koa';
import bodyParser from 'koa-bodyparser';
import { createServer, type Server } from 'node:http';

/** Bare Koa answering a JSON body with a small JSON envelope: the floor the gateway is measured against. */
export async function startBaseline(): Promise<{ url: string; close: () => Promise<void> }> {
  const app = new Koa();
  app.use(bodyParser());
  app.use((ctx) => {
    ctx.status = ctx.method === 'POST' ? 202 : 200;
    ctx.body = { ok: 1, data: { echo: ctx.request.body ?? null }, meta: null };
  });
  const server: Server = createServer(app.callback());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}
