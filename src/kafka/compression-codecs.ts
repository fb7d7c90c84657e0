import { compress as zstdCompress, decompress as zstdDecompress } from '@mongodb-js/zstd';
import kafkajs, { type CompressionTypes } from 'kafkajs';
import { compressFrame as lz4Compress, decompressFrame as lz4Decompress } from 'lz4-napi';
import { compress as snappyCompress, uncompress as snappyUncompress } from 'snappy';

/**
 * kafkajs reads and writes gzip alone; every other codec Kafka defines throws
 * KafkaJSNotImplemented, and a consumer that meets one such record batch stops on it for
 * good. The Java client, librdkafka and the log shippers built on it write snappy, lz4 and
 * zstd, and topics may set `compression.type`, so the codecs are registered here, from
 * packages that ship prebuilt binaries (napi-rs) and need no build on install.
 */

// kafkajs is CommonJS, and Node's reading of its named exports misses these (they follow a spread).
const { CompressionCodecs, CompressionTypes: Codec } = kafkajs;

/** A kafkajs codec: it compresses what an encoder holds and decompresses a record batch's records. */
interface KafkaCodec {
  compress(encoder: { readonly buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
}

/**
 * The Java client (snappy-java's SnappyOutputStream) frames snappy in xerial's format: this
 * magic, two version words, then blocks each led by its compressed length. librdkafka
 * writes it too and reads both it and plain snappy; so does this codec.
 */
const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = XERIAL_MAGIC.length + 8;
const XERIAL_VERSION = 1;

export class CodecFrameError extends Error {
  override readonly name = 'CodecFrameError';
}

async function uncompressSnappyBlock(block: Uint8Array): Promise<Buffer> {
  const out = await snappyUncompress(block, { asBuffer: true });
  return typeof out === 'string' ? Buffer.from(out) : out;
}

export async function snappyUnframe(buffer: Buffer): Promise<Buffer> {
  if (buffer.length < XERIAL_HEADER_BYTES || !buffer.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC)) {
    return uncompressSnappyBlock(buffer);
  }
  const blocks: Buffer[] = [];
  for (let at = XERIAL_HEADER_BYTES; at < buffer.length; ) {
    if (at + 4 > buffer.length) throw new CodecFrameError('snappy: a block length is cut short');
    const length = buffer.readUInt32BE(at);
    at += 4;
    if (at + length > buffer.length) throw new CodecFrameError('snappy: a block is cut short');
    blocks.push(await uncompressSnappyBlock(buffer.subarray(at, at + length)));
    at += length;
  }
  return Buffer.concat(blocks);
}

export async function snappyFrame(data: Buffer): Promise<Buffer> {
  const block = await snappyCompress(data);
  const header = Buffer.alloc(XERIAL_HEADER_BYTES + 4);
  XERIAL_MAGIC.copy(header);
  header.writeUInt32BE(XERIAL_VERSION, XERIAL_MAGIC.length);
  header.writeUInt32BE(XERIAL_VERSION, XERIAL_MAGIC.length + 4);
  header.writeUInt32BE(block.length, XERIAL_HEADER_BYTES);
  return Buffer.concat([header, block]);
}

const CODECS: Readonly<Record<CompressionTypes.Snappy | CompressionTypes.LZ4 | CompressionTypes.ZSTD, KafkaCodec>> = {
  [Codec.Snappy]: {
    compress: (encoder) => snappyFrame(encoder.buffer),
    decompress: snappyUnframe,
  },
  // Kafka's lz4 is the LZ4 frame format (record batches of magic 2 always carry a correct frame).
  [Codec.LZ4]: {
    compress: (encoder) => lz4Compress(encoder.buffer),
    decompress: (buffer) => lz4Decompress(buffer),
  },
  [Codec.ZSTD]: {
    compress: (encoder) => zstdCompress(encoder.buffer),
    decompress: (buffer) => zstdDecompress(buffer),
  },
};

/**
 * Puts the codecs into kafkajs's table of codecs, which is the library's own process-wide
 * registry (there is no per-client option): once is enough, and again is harmless.
 */
export function registerCompressionCodecs(): void {
  for (const [type, codec] of Object.entries(CODECS)) {
    CompressionCodecs[Number(type) as keyof typeof CODECS] = () => codec;
  }
}

/** The codecs a producer of ours may be told to use (KAFKA_COMPRESSION), by their Kafka names. */
export const COMPRESSION_NAMES = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export type CompressionName = (typeof COMPRESSION_NAMES)[number];

const TYPES: Readonly<Record<CompressionName, CompressionTypes>> = {
  none: Codec.None,
  gzip: Codec.GZIP,
  snappy: Codec.Snappy,
  lz4: Codec.LZ4,
  zstd: Codec.ZSTD,
};

export const compressionType = (name: CompressionName): CompressionTypes => TYPES[name];
