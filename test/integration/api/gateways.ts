import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';

let gateway: Promise<TestGateway> | undefined;

/** The one embedded gateway of this mocha process (chDB binds one data directory per process). */
export function sharedGateway(): Promise<TestGateway> {
  gateway ??= startTestGateway();
  return gateway;
}

/** Root hooks, loaded with --require: close the shared gateway after the whole run. */
export const mochaHooks = {
  async afterAll(): Promise<void> {
    if (gateway !== undefined) await (await gateway).close();
  },
};
