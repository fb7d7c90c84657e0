import { expect } from 'chai';
import { readDeadLetter } from '../../../src/dead-letters/dead-letter.js';
import { scopeOf } from '../../../src/dead-letters/letter-scope.js';
import { inspectReport, replaySummary, Tally, type Outcome } from '../../../src/dead-letters/tally.js';
import { canonicalEvent } from '../../support/factories.js';
import { deadLetterRecord } from './dead-letter-factory.js';

describe('the dead-letter tally', () => {
  function tallyOf(entries: [ReturnType<typeof deadLetterRecord>, Outcome][]): Tally {
    const t = new Tally();
    for (const [record, outcome] of entries) {
      const letter = readDeadLetter(record);
      t.add(letter, scopeOf(letter.message.value), outcome);
    }
    return t;
  }
  const event = (project: string) => Buffer.from(JSON.stringify(canonicalEvent({ org_id: 'org-a', project_id: project })));
  const at = (iso: string) => String(Date.parse(iso));

  const tally = tallyOf([
    [deadLetterRecord({ reason: 'schema-violation', value: event('p1'), timestamp: at('2026-05-01T10:05:00Z') }), 'sent'],
    [deadLetterRecord({ reason: 'schema-violation', value: event('p1'), timestamp: at('2026-05-01T10:59:00Z') }), 'loop-guard'],
    [deadLetterRecord({ reason: 'invalid-json', value: Buffer.from('{'), timestamp: at('2026-05-01T12:00:00Z') }), 'not-selected'],
    [deadLetterRecord({ reason: 'json-limit-exceeded', value: Buffer.from('{"a":'), headers: { 'dlq-truncated': 'true', 'dlq-source-offset': '77' }, timestamp: at('2026-05-01T09:00:00Z') }), 'truncated'],
  ]);

  it('counts what was read, selected, sent and skipped, by reason', () => {
    expect(tally).to.include({ read: 4, selected: 3, sent: 1, loopGuarded: 1, truncated: 1 });
    expect(Object.fromEntries(tally.byReason)).to.deep.equal({ 'schema-violation': 2, 'invalid-json': 1, 'json-limit-exceeded': 1 });
    expect(Object.fromEntries(tally.byHour)).to.deep.equal({ '2026-05-01T10:00Z': 2, '2026-05-01T12:00Z': 1, '2026-05-01T09:00Z': 1 });
    expect(Object.fromEntries(tally.byProject)).to.deep.equal({ p1: 2, '(value not an event)': 2 });
  });

  it('the summary says what was done, and where the originals of truncated references lie', () => {
    const text = replaySummary(tally, { group: 'core-gateway-dlq-replay.x', maxReplays: 3 });
    expect(text).to.include('run core-gateway-dlq-replay.x: read 4, selected 3, sent 1, skipped by the loop guard 1 (dlq-replay-count >= 3), truncated references not sent 1');
    expect(text).to.include('  schema-violation: 2 / 2 / 1');
    expect(text).to.include('  invalid-json: 1 / 0 / 0');
    expect(text).to.include('  platform.events partition 2 offset 77');
  });

  it('the inspect report gives the oldest and newest, and each histogram', () => {
    const text = inspectReport(tally);
    expect(text).to.include('dead letters: 4, oldest 2026-05-01T09:00:00.000Z, newest 2026-05-01T12:00:00.000Z');
    expect(text).to.match(/by reason:\n\s+2 {2}schema-violation\n/);
    expect(text).to.match(/by organization:\n\s+2 {2}\(value not an event\)\n\s+2 {2}org-a\n/);
  });
});
