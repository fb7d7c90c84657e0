import { expect } from 'chai';
import { scopeSpanSql, spanAnswers, spanHolds, spanHoldsBelow, spanRows, spanStep, type ScopeSpan, type SpanStep } from '../../../src/store/event-spans.js';
import { storableEvent } from '../../../src/store/event-rows.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { storeTextMs } from '../../../src/store/feed-windows.js';

const t = (day: number, time = '00:00:00.000000') => `2026-01-${String(day).padStart(2, '0')} ${time}`;
const span = (oldest: string, newest: string): ScopeSpan => ({ oldest, newest });

describe('event spans', () => {
  describe('what a page does with its span after an empty window, its lower edge on the 20th', () => {
    const lowest = t(20);
    const reach = t(5);
    const cases: [name: string, span: ScopeSpan | undefined, found: number, since: string | undefined, step: SpanStep][] = [
      ['no span, nothing found: the scope has no event', undefined, 0, undefined, { kind: 'end' }],
      ['no span, events found: an insert whose span is not visible yet', undefined, 3, undefined, { kind: 'walk' }],
      ['the oldest event at the edge: read already', span(lowest, t(25)), 0, undefined, { kind: 'end' }],
      ['the oldest event above the edge', span(t(21), t(25)), 2, undefined, { kind: 'end' }],
      ['the newest event below `since`', span(t(1), t(9)), 0, t(10), { kind: 'end' }],
      ['the newest event above the window: nothing known of the time below', span(t(1), t(25)), 0, undefined, { kind: 'walk' }],
      ['the newest event at the edge: nothing known of the time below', span(t(1), lowest), 0, undefined, { kind: 'walk' }],
      ['the newest event below the reach', span(t(1), t(4, '23:59:59.999999')), 0, undefined, { kind: 'reach' }],
      ['the newest event between the reach and the edge', span(t(1), t(12, '08:30:00.000250')), 0, undefined, { kind: 'skip', newestMs: storeTextMs(t(12, '08:30:00.000250')) }],
      ['the newest event at the reach', span(t(1), reach), 0, undefined, { kind: 'skip', newestMs: storeTextMs(reach) }],
    ];
    for (const [name, given, found, since, step] of cases) {
      it(name, () => {
        expect(spanStep(given, found, lowest, reach, since)).to.deep.equal(step);
      });
    }

    it('skips to the newest event below the edge when the page has no reach', () => {
      expect(spanStep(span(t(1), t(2)), 0, lowest, undefined, undefined)).to.deep.equal({ kind: 'skip', newestMs: storeTextMs(t(2)) });
    });
  });

  it('writes one span row a scope of a batch, from its oldest to its newest event, scopes told apart whatever their values hold', () => {
    const project = { org_id: uuid(), project_id: uuid() };
    // Another organization's project of the same id, and another project of the same organization.
    const otherOrg = { ...project, org_id: uuid() };
    const otherProject = { ...project, project_id: uuid() };
    const event = (occurred_at: string, domain: string, entity: string, action = 'recorded', of = project) => storableEvent(canonicalEvent({ ...of, occurred_at, domain, entity, action }));
    const rows = spanRows([
      event('2026-01-02T00:00:00Z', 'telemetry', 'reading'),
      event('2026-01-01T00:00:00.000001Z', 'telemetry', 'reading'),
      event('2026-01-03T00:00:00Z', 'telemetry', 'reading'),
      // The same characters split differently between domain and entity: two scopes.
      event('2026-01-04T00:00:00Z', 'tele', 'metryreading'),
      event('2026-01-05T00:00:00Z', 'telemetry', 'reading', 'queued'),
      event('2026-01-06T00:00:00Z', 'telemetry', 'reading', 'recorded', otherOrg),
      event('2026-01-07T00:00:00Z', 'telemetry', 'reading', 'recorded', otherProject),
      // Each scope widened after the others came: the first project's first scope, and the other organization's.
      event('2026-01-08T00:00:00Z', 'telemetry', 'reading'),
      event('2026-01-05T12:00:00Z', 'telemetry', 'reading', 'recorded', otherOrg),
    ]).map((row) => JSON.parse(row) as Record<string, string>);
    const scope = { domain: 'telemetry', entity: 'reading', action: 'recorded' };
    expect(rows).to.deep.equal([
      { ...project, ...scope, oldest: '2026-01-01 00:00:00.000001', newest: '2026-01-08 00:00:00.000000' },
      { ...project, domain: 'tele', entity: 'metryreading', action: 'recorded', oldest: '2026-01-04 00:00:00.000000', newest: '2026-01-04 00:00:00.000000' },
      { ...project, ...scope, action: 'queued', oldest: '2026-01-05 00:00:00.000000', newest: '2026-01-05 00:00:00.000000' },
      { ...otherOrg, ...scope, oldest: '2026-01-05 12:00:00.000000', newest: '2026-01-06 00:00:00.000000' },
      { ...otherProject, ...scope, oldest: '2026-01-07 00:00:00.000000', newest: '2026-01-07 00:00:00.000000' },
    ]);
    expect(spanRows([])).to.deep.equal([]);
  });

  it('is proved stale by any row read outside it', () => {
    const within = span(t(10), t(20));
    expect(spanHolds(within, [{ occurred_at: t(10) }, { occurred_at: t(20) }, { occurred_at: t(15) }])).to.equal(true);
    expect(spanHolds(within, [])).to.equal(true);
    expect(spanHolds(within, [{ occurred_at: t(15) }, { occurred_at: t(20, '00:00:00.000001') }]), 'a row newer than its newest').to.equal(false);
    expect(spanHolds(within, [{ occurred_at: t(9, '23:59:59.999999') }]), 'a row older than its oldest').to.equal(false);
  });

  describe('whether the scope holds an event below the edge (the 20th) and at or after since, as far as its span tells', () => {
    const cases: [name: string, span: ScopeSpan, since: string | undefined, holds: boolean | undefined][] = [
      ['its oldest at the edge: no', span(t(20), t(25)), undefined, false],
      ['its oldest below, no since: yes', span(t(1), t(25)), undefined, true],
      ['its newest below since: no', span(t(1), t(5)), t(6), false],
      ['its newest between since and the edge: yes', span(t(1), t(12)), t(6), true],
      ['its newest above the edge, since set: the events between may all lie below since', span(t(1), t(25)), t(6), undefined],
    ];
    for (const [name, given, since, holds] of cases) {
      it(name, () => {
        expect(spanHoldsBelow(given, t(20), since)).to.equal(holds);
      });
    }
  });

  it('answers the domain, entity and action filters and no other', () => {
    expect(spanAnswers({ domain: 'd', entity: 'e', action: 'a', since: t(1), until: t(2) })).to.equal(true);
    expect(spanAnswers({ deviceId: 'x' })).to.equal(false);
    expect(spanAnswers({ fleetId: 'x', domain: 'd' })).to.equal(false);
  });

  it('binds every value of a span read as a parameter', () => {
    const { sql, params } = scopeSpanSql({ orgId: 'o', projectId: 'p', filters: { domain: "x' OR 1", action: 'a', since: t(1) } });
    expect(sql).to.equal(
      "SELECT min(oldest) AS oldest, max(newest) AS newest, count() AS scopes FROM event_spans WHERE org_id = {org_id:UUID} AND project_id = {project_id:UUID} AND domain = {domain:String} AND action = {action:String} SETTINGS date_time_output_format = 'simple'",
    );
    expect(params).to.deep.equal({ org_id: 'o', project_id: 'p', domain: "x' OR 1", action: 'a' });
  });
});
