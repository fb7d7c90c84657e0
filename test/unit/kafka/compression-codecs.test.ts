import { expect } from 'chai';
import kafkajs from 'kafkajs';
import { compress as rawSnappy } from 'snappy';
import { CodecFrameError, COMPRESSION_NAMES, compressionType, registerCompressionCodecs, snappyFrame, snappyUnframe } from '../../../src/kafka/compression-codecs.js';
import { rejectionOf } from '../../support/rejections.js';

const { CompressionCodecs, CompressionTypes } = kafkajs;

/** Records as kafkajs hands them to a codec: compressible, as telemetry is. */
const records = Buffer.from(JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ id: i, entity: 'reading', value: i * 1.5 }))));

function bigEndian32(n: number): Buffer {
  const out = Buffer.alloc(4);
  out.writeUInt32BE(n);
  return out;
}

describe('compression codecs', () => {
  before(registerCompressionCodecs);

  for (const name of COMPRESSION_NAMES.filter((n) => n !== 'none')) {
    it(`round-trips a record batch through kafkajs's table for ${name}, smaller than it came`, async () => {
      const codec = CompressionCodecs[compressionType(name) as keyof typeof CompressionCodecs]() as {
        compress(encoder: { buffer: Buffer }): Promise<Buffer>;
        decompress(buffer: Buffer): Promise<Buffer>;
      };
      const compressed = await codec.compress({ buffer: records });
      expect(compressed.length).to.be.lessThan(records.length);
      expect(await codec.decompress(compressed)).to.deep.equal(records);
    });
  }

  it('maps each Kafka codec name to its kafkajs type', () => {
    expect(COMPRESSION_NAMES.map(compressionType)).to.deep.equal([CompressionTypes.None, CompressionTypes.GZIP, CompressionTypes.Snappy, CompressionTypes.LZ4, CompressionTypes.ZSTD]);
  });

  it("reads snappy in the Java client's xerial framing, over several blocks, and plain snappy as librdkafka may send it", async () => {
    const halves = [records.subarray(0, 1000), records.subarray(1000)];
    const blocks = await Promise.all(halves.map((half) => rawSnappy(half)));
    const header = (await snappyFrame(Buffer.alloc(0))).subarray(0, 16);
    const framed = Buffer.concat([header, ...blocks.flatMap((block) => [bigEndian32(block.length), block])]);
    expect(await snappyUnframe(framed)).to.deep.equal(records);
    expect(await snappyUnframe(await rawSnappy(records))).to.deep.equal(records);
  });

  it('refuses a xerial frame cut short rather than reading past it', async () => {
    const framed = await snappyFrame(records);
    expect(await rejectionOf(snappyUnframe(framed.subarray(0, framed.length - 3)))).to.be.instanceOf(CodecFrameError);
  });
});
