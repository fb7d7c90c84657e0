import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config/config.js';
import type { CanonicalEvent } from '../../src/generated/schema-types.js';
import { API_PREFIX } from '../../src/http/app.js';
import { createLogger } from '../../src/observability/logger.js';
import { startRuntime, type Runtime } from '../../src/runtime/gateway-runtime.js';
import { hs256Token, uuid, type TokenOptions } from './factories.js';
import { request, type HttpResponse, type RequestOptions } from './http-client.js';
import { KEEP_NO_FIRST_PAGES } from './first-pages-env.js';

/** One tenant of the gateway: an organization and a project no other test uses. */
export interface Tenant {
  readonly orgId: string;
  readonly projectId: string;
  /** Headers of a caller with every permission for this tenant's organization. */
  headers(options?: TokenOptions & { orgHeader?: string }): Promise<Record<string, string>>;
}

export interface TestGateway {
  readonly config: Config;
  readonly baseUrl: string;
  readonly secret: string;
  readonly dataDir: string;
  readonly runtime: Runtime;
  tenant(): Tenant;
  call<B = unknown>(method: string, path: string, options?: RequestOptions): Promise<HttpResponse<B>>;
  /** Puts events into the store through the real ingest path, each as the bytes of a Kafka message. */
  seed(events: readonly CanonicalEvent[]): Promise<void>;
  /** Closes the runtime, runs `whileDown` if given, and opens it again on the same data directory. */
  restart(whileDown?: () => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the real runtime on a random port, with its own data directory and signing
 * secret, and quiet logs. chDB holds one data directory per process, so a suite shares
 * one of these and tests keep apart by using fresh tenants.
 */
export async function startTestGateway(extraEnv: Record<string, string> = {}): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'core-gateway-test-'));
  const secret = randomBytes(32).toString('hex');
  // Every test connects from 127.0.0.1, and many send bad tokens on purpose: the limit on
  // failed authentications per address is off unless a test sets it (test/integration/api/adversarial/).
  // Kept first pages too (KEEP_NO_FIRST_PAGES).
  const env = { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, AUTH_JWT_SECRET: secret, LOG_LEVEL: process.env.TEST_GATEWAY_LOG_LEVEL || 'silent', AUTH_FAILURES_PER_MINUTE: '0', ...KEEP_NO_FIRST_PAGES, ...extraEnv };
  const config = loadConfig(env);
  const logger = createLogger(config.logLevel);
  let runtime = await startRuntime(config, logger).catch((error: unknown) => {
    // A start the test expects to be refused must not leave its data directory behind.
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  });
  let baseUrl = `${runtime.url}${API_PREFIX}`;

  const gateway: TestGateway = {
    config,
    get baseUrl() {
      return baseUrl;
    },
    secret,
    dataDir,
    get runtime() {
      return runtime;
    },
    tenant() {
      const orgId = uuid();
      return {
        orgId,
        projectId: uuid(),
        async headers(options = {}) {
          const token = await hs256Token(secret, { orgIds: [orgId], ...options });
          return { authorization: `Bearer ${token}`, 'org-id': options.orgHeader ?? orgId };
        },
      };
    },
    call(method, path, options) {
      return request(method, `${baseUrl}${path}`, options);
    },
    async seed(events) {
      const result = await runtime.ingestor.ingestMessages(events.map((e) => ({ value: Buffer.from(JSON.stringify(e)) })));
      if (result.rejected.length > 0) throw new Error(`seed rejected: ${result.rejected.map((r) => r.detail).join(', ')}`);
    },
    async restart(whileDown) {
      await runtime.close();
      try {
        await whileDown?.();
      } finally {
        // Up again even when whileDown failed: the suites share this gateway, and one test's
        // failure must not turn every later test into a refused connection.
        runtime = await startRuntime(config, logger);
        baseUrl = `${runtime.url}${API_PREFIX}`;
      }
    },
    async close() {
      await runtime.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return gateway;
}
