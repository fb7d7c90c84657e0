import { expect } from 'chai';
import { bufferingFor, insertSettings } from '../../../src/store/clickhouse-server-transport.js';
import { INSERT_SETTINGS } from '../../../src/store/sql-transport.js';

const BUFFERED = { async_insert: 1, wait_for_async_insert: 1 };

describe('insert buffering on a ClickHouse server: by the size of the whole write', () => {
  it('buffers a write below 1,000 rows, and waits for its flush', () => {
    for (const rows of [1, 25, 999]) expect(bufferingFor(rows), `${rows} rows`).to.deep.equal(BUFFERED);
  });

  it('writes 1,000 rows or more at once, as a part of their own', () => {
    for (const rows of [1000, 50_000]) expect(bufferingFor(rows), `${rows} rows`).to.deep.equal({});
  });

  it("never buffers a small statement of a large write (a batch's spans, the last months of a split backfill)", () => {
    expect(bufferingFor(4, 50_000)).to.deep.equal({});
    expect(bufferingFor(999, 1000)).to.deep.equal({});
  });

  it('buffers every statement of a small write', () => {
    expect(bufferingFor(1, 3)).to.deep.equal(BUFFERED);
    expect(bufferingFor(3, 3)).to.deep.equal(BUFFERED);
  });

  it("sends an insert the product's settings, buffering by its write, and a cluster's foreground insert", () => {
    expect(insertSettings(4, { writeRows: 50_000 }, false)).to.deep.equal(INSERT_SETTINGS);
    expect(insertSettings(4, {}, false)).to.deep.equal({ ...INSERT_SETTINGS, ...BUFFERED });
    expect(insertSettings(4, { writeRows: 50_000 }, true)).to.deep.equal({ ...INSERT_SETTINGS, distributed_foreground_insert: 1 });
    expect(insertSettings(4, { writeRows: 10 }, true)).to.deep.equal({ ...INSERT_SETTINGS, ...BUFFERED, distributed_foreground_insert: 1 });
  });
});
