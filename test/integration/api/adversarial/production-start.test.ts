import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../../support/processes.js';

interface Ended {
  readonly code: number | null;
  readonly output: string;
}

/** Runs src/main.ts as the image runs it, with only `env`, and waits for it to exit: every start here must be refused. */
function refusedStart(env: Record<string, string>): Promise<Ended> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return new Promise((resolve) => {
    // A start that is not refused would serve until killed: give it a bound, then fail the test.
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/**
 * OWASP API8:2023 (security misconfiguration), review finding 3: a production start
 * without an auth configuration, and a development secret anyone could read or guess.
 */
describe('API8:2023 no production start on a development secret', function () {
  this.timeout(120_000);
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'production-start-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('refuses NODE_ENV=production (the Dockerfile\'s) without an auth variable, naming the variables, and writes no secret', async () => {
    const ended = await refusedStart({ NODE_ENV: 'production', DATA_DIR: dataDir });
    expect(ended.code, ended.output).to.equal(2);
    expect(ended.output).to.match(/invalid configuration: NODE_ENV: is production, which needs one of AUTH_JWT_SECRET \(or AUTH_JWT_SECRET_FILE\), AUTH_JWKS_URL, AUTH_OIDC_ISSUER or AUTH_PUBLIC_KEY/);
    expect(() => writeFileSync(join(dataDir, 'dev-jwt-secret'), 'x', { flag: 'wx' })).to.not.throw();
  });

  for (const [what, text, mode, said] of [
    ['world-readable', `${'0123456789abcdef'.repeat(4)}\n`, 0o644, /chmod 600/],
    ['weak (64 × a)', `${'a'.repeat(64)}\n`, 0o600, /too weak/],
  ] as const) {
    it(`refuses a development secret file that is ${what}, rather than use it`, async () => {
      writeFileSync(join(dataDir, 'dev-jwt-secret'), text, { mode });
      const ended = await refusedStart({ DATA_DIR: dataDir });
      expect(ended.code, ended.output).to.equal(1);
      expect(ended.output).to.match(/failed to start: .*dev-jwt-secret: /);
      expect(ended.output).to.match(said);
      expect(ended.output).to.not.include(text.trim());
    });
  }
});
