import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HttpServerConfig } from '../config/config.js';
import { answerClientError, answerConnect, answerUnmetExpectation } from '../http/error-response.js';

export interface HttpServer {
  /** e.g. http://127.0.0.1:8080 */
  readonly url: string;
  /**
   * Stops taking connections, lets requests in flight finish and closes each keep-alive
   * connection after its current answer; what is still open after `graceMs` is cut.
   */
  close(graceMs: number): Promise<void>;
}

function listen(server: Server, port: number, host: string): Promise<AddressInfo> {
  return new Promise((done, fail) => {
    server.once('error', fail);
    server.listen(port, host, () => {
      server.off('error', fail);
      done(server.address() as AddressInfo);
    });
  });
}

/**
 * A Node HTTP server for a Koa app that can drain. server.close() alone waits for every
 * keep-alive connection to go idle, which under steady load never happens: a client on a
 * busy connection sends its next request as soon as it has an answer. So once draining,
 * every answer not yet started says `Connection: close`, and Node ends its connection after it.
 */
export async function startHttpServer(app: { callback(): RequestListener }, port: number, host: string, limits: HttpServerConfig): Promise<HttpServer> {
  const server = createServer(
    {
      // A client that sends its request a byte at a time is cut off (408) once these run out.
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Node looks for connections past those limits on this beat, 30 s unless told; it bounds how late a cut-off comes.
      connectionsCheckingInterval: Math.min(1000, Math.ceil(limits.headersTimeoutMs / 4)),
      // Node would refuse a request without Host with a bare 400; the API never reads Host, so Koa answers it as any other.
      requireHostHeader: false,
    },
    app.callback(),
  );
  server.on('clientError', answerClientError);
  server.on('connect', answerConnect);
  server.on('checkExpectation', answerUnmetExpectation);
  const inFlight = new Set<ServerResponse>();
  let draining = false;
  // Runs before Koa's handler, so the flag is on the response before anything is written.
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    if (draining) res.shouldKeepAlive = false;
    inFlight.add(res);
    res.once('close', () => inFlight.delete(res));
  });
  const address = await listen(server, port, host);
  const bound = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${bound === '0.0.0.0' || bound === '[::]' ? '127.0.0.1' : bound}:${address.port}`;
  return {
    url,
    close: (graceMs) =>
      new Promise<void>((done) => {
        draining = true;
        for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false;
        const cut = setTimeout(() => server.closeAllConnections(), graceMs);
        server.close(() => {
          clearTimeout(cut);
          done();
        });
        server.closeIdleConnections();
      }),
  };
}
