import { expect } from 'chai';
import { readDeadLetter } from '../../../src/dead-letters/dead-letter.js';
import { scopeOf } from '../../../src/dead-letters/letter-scope.js';
import { describeSelection, SELECT_ALL, selects, type Selection } from '../../../src/dead-letters/selection.js';
import { canonicalEvent } from '../../support/factories.js';
import { deadLetterRecord } from './dead-letter-factory.js';

describe('dead-letter selection', () => {
  const event = canonicalEvent({ org_id: 'org-a', project_id: 'proj-a' });
  const letter = readDeadLetter(deadLetterRecord({ value: Buffer.from(JSON.stringify(event)), reason: 'timestamp-out-of-range' }));
  const scope = scopeOf(letter.message.value);
  const only = (s: Partial<Selection>) => selects({ ...SELECT_ALL, ...s }, letter, scope);

  it('reads the provenance headers', () => {
    expect(letter).to.include({ reason: 'timestamp-out-of-range', truncated: false, replayCount: 0, timestampMs: Date.parse('2026-05-01T10:30:00Z') });
    expect(letter.source).to.deep.equal({ topic: 'platform.events', partition: 2, offset: 40n });
    expect(scope).to.deep.equal({ org: 'org-a', project: 'proj-a' });
  });

  it('selects by each criterion, both ways', () => {
    expect(only({})).to.equal(true);
    expect(only({ reasons: ['timestamp-out-of-range'] })).to.equal(true);
    expect(only({ reasons: ['invalid-json'] })).to.equal(false);
    expect(only({ sinceMs: Date.parse('2026-05-01T10:30:00Z') })).to.equal(true);
    expect(only({ sinceMs: Date.parse('2026-05-01T10:30:01Z') })).to.equal(false);
    expect(only({ untilMs: Date.parse('2026-05-01T10:30:00Z') }), 'until excludes its own instant').to.equal(false);
    expect(only({ untilMs: Date.parse('2026-05-01T11:00:00Z') })).to.equal(true);
    expect(only({ sourceTopic: 'platform.events' })).to.equal(true);
    expect(only({ sourceTopic: 'other' })).to.equal(false);
    expect(only({ sourcePartition: 2 })).to.equal(true);
    expect(only({ sourcePartition: 0 })).to.equal(false);
    expect(only({ sourceOffsets: { from: 40n, to: 40n } }), 'both ends included').to.equal(true);
    expect(only({ sourceOffsets: { from: 41n, to: 99n } })).to.equal(false);
    expect(only({ org: 'org-a', project: 'proj-a' })).to.equal(true);
    expect(only({ org: 'org-b' })).to.equal(false);
    expect(only({ project: 'proj-b' })).to.equal(false);
  });

  it('a value that is not an event has no organization, so a selection by one leaves it out', () => {
    const raw = readDeadLetter(deadLetterRecord({ value: Buffer.from('not json') }));
    expect(scopeOf(raw.message.value)).to.deep.equal({ org: undefined, project: undefined });
    expect(selects({ ...SELECT_ALL, org: 'org-a' }, raw, scopeOf(raw.message.value))).to.equal(false);
    expect(scopeOf(null)).to.deep.equal({ org: undefined, project: undefined });
    expect(scopeOf(Buffer.from('[1]'))).to.deep.equal({ org: undefined, project: undefined });
  });

  it('a letter without provenance headers is selected by no source criterion', () => {
    const bare = readDeadLetter({ key: null, value: null, timestamp: '0', attributes: 0, offset: '0', headers: {} });
    expect(bare.reason).to.equal('unknown');
    expect(selects({ ...SELECT_ALL, sourceOffsets: { from: 0n, to: 100n } }, bare, scope)).to.equal(false);
  });

  it('describes a selection the same way whatever the order of its reasons', () => {
    expect(describeSelection(SELECT_ALL)).to.equal('all');
    const a = describeSelection({ ...SELECT_ALL, reasons: ['b', 'a'], sourceOffsets: { from: 1n, to: 2n } });
    expect(a).to.equal(describeSelection({ ...SELECT_ALL, reasons: ['a', 'b'], sourceOffsets: { from: 1n, to: 2n } }));
    expect(a).to.equal('reason=a,b source-offsets=1-2');
  });
});
