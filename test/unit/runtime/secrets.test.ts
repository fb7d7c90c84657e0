import { expect } from 'chai';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StartupError } from '../../../src/errors/startup-error.js';
import { estimatedSecretBits, loadOrCreateSecret } from '../../../src/runtime/secrets.js';

describe('secrets kept in files', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'secrets-test-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates a 0600 file of 64 hex digits on first use, and reads it back after', () => {
    const file = join(dir, 'sub', 'dev-jwt-secret');
    const first = loadOrCreateSecret(file);
    expect(first.created).to.equal(true);
    expect(first.secret).to.match(/^[0-9a-f]{64}$/);
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    expect(loadOrCreateSecret(file)).to.deep.equal({ secret: first.secret, created: false });
  });

  for (const mode of [0o644, 0o640, 0o604, 0o660]) {
    it(`refuses a file with mode ${mode.toString(8)}, and leaves it as it was`, () => {
      const file = join(dir, 'dev-jwt-secret');
      loadOrCreateSecret(file);
      const before = readFileSync(file, 'utf8');
      chmodSync(file, mode);
      expect(() => loadOrCreateSecret(file)).to.throw(StartupError, /chmod 600/);
      expect(readFileSync(file, 'utf8')).to.equal(before);
    });
  }

  for (const [what, text] of [
    ['64 × a', 'a'.repeat(64)],
    ['a short secret', 'a1b2c3d4e5f6'],
    ['an empty file', ''],
    ['two characters repeated', 'ab'.repeat(40)],
  ] as const) {
    it(`refuses ${what} as too weak, without replacing it`, () => {
      const file = join(dir, 'dev-jwt-secret');
      writeFileSync(file, text, { mode: 0o600 });
      expect(() => loadOrCreateSecret(file)).to.throw(StartupError, /too weak/);
      expect(readFileSync(file, 'utf8')).to.equal(text);
    });
  }

  it('estimates a generated secret far above the bar and a repeated one at none', () => {
    expect(estimatedSecretBits('0123456789abcdef'.repeat(4))).to.equal(256);
    expect(estimatedSecretBits('a'.repeat(64))).to.equal(0);
  });
});
