import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Produces messages with the Kafka Java client, as other services' producers do: the
 * codec, batching, idempotence and transactions the tests ask for, so the ingest consumer
 * reads batches written the way the field writes them (kafkajs cannot write lz4, snappy
 * or zstd batches at all).
 *
 * Run through test/support/java/field-producer.sh, which puts the broker's own
 * kafka-clients (and its codecs) on the class path:
 *
 *   field-producer.sh --bootstrap-server H:P --topic T [--compression none|gzip|snappy|lz4|zstd]
 *     [--idempotence true|false] [--linger-ms N] [--batch-size N] [--max-request-size N]
 *     [--transaction none|committed|aborted]
 *
 * Acks are always `all`. Standard input holds one message a line, five fields separated by
 * tabs: key, value, headers, partition, timestamp (ms). Key and value are base64 (an empty
 * field is an empty byte string), `-` is null (a null value is a tombstone); headers are
 * `-` or comma-separated `name:value` pairs, each side base64 (a value `-` is null);
 * partition and timestamp are a number or `-` (the client picks). In a transaction mode a
 * line `commit` or `abort` ends the open transaction that way; at the end of input an open
 * transaction ends as the mode says. Every record is flushed before its transaction ends,
 * so an aborted one is in the log, behind an abort marker, as a real producer leaves it.
 *
 * Prints one line per message once its fate is known, in input order:
 * `sent<TAB>index<TAB>partition<TAB>offset<TAB>committed|aborted|plain`. Any other stdout
 * line is not ours. Exit 0 when every message was acknowledged, 2 otherwise.
 */
public final class FieldProducer {
  private record Pending(int index, Future<RecordMetadata> ack) {}

  public static void main(String[] args) {
    try {
      System.exit(run(args));
    } catch (IllegalArgumentException e) {
      System.err.println("field-producer: " + e.getMessage());
      System.exit(2);
    } catch (Exception e) {
      System.err.println("field-producer: failed: " + e);
      for (Throwable c = e.getCause(); c != null; c = c.getCause()) System.err.println("  caused by: " + c);
      System.exit(2);
    }
  }

  private static int run(String[] args) throws Exception {
    String bootstrap = null;
    String topic = null;
    String compression = "none";
    String idempotence = "true";
    String lingerMs = "5";
    String batchSize = "16384";
    String maxRequestSize = null;
    String transaction = "none";
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (i + 1 >= args.length) throw new IllegalArgumentException(arg + " needs a value");
      String value = args[++i];
      switch (arg) {
        case "--bootstrap-server" -> bootstrap = value;
        case "--topic" -> topic = value;
        case "--compression" -> compression = oneOf(arg, value, "none", "gzip", "snappy", "lz4", "zstd");
        case "--idempotence" -> idempotence = oneOf(arg, value, "true", "false");
        case "--linger-ms" -> lingerMs = value;
        case "--batch-size" -> batchSize = value;
        case "--max-request-size" -> maxRequestSize = value;
        case "--transaction" -> transaction = oneOf(arg, value, "none", "committed", "aborted");
        default -> throw new IllegalArgumentException("unknown argument " + arg);
      }
    }
    if (bootstrap == null || topic == null) throw new IllegalArgumentException("--bootstrap-server and --topic are required");
    boolean transactional = !transaction.equals("none");

    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.CLIENT_ID_CONFIG, "field-producer-" + compression);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, transactional ? "true" : idempotence);
    props.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
    props.put(ProducerConfig.LINGER_MS_CONFIG, lingerMs);
    props.put(ProducerConfig.BATCH_SIZE_CONFIG, batchSize);
    if (maxRequestSize != null) props.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, maxRequestSize);
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
    // A topic that does not exist fails the run in seconds, not after the default minute.
    props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    if (transactional) props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "field-producer-" + UUID.randomUUID());

    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      if (transactional) producer.initTransactions();
      List<Pending> open = new ArrayList<>();
      boolean inTransaction = false;
      int index = 0;
      int lineNo = 0;
      for (String line; (line = in.readLine()) != null; ) {
        lineNo++;
        if (line.isEmpty()) continue;
        if (line.equals("commit") || line.equals("abort")) {
          if (!transactional) throw new IllegalArgumentException("line " + lineNo + ": " + line + " needs a --transaction mode");
          if (inTransaction) end(producer, open, line.equals("commit"), out);
          inTransaction = false;
          continue;
        }
        if (transactional && !inTransaction) {
          producer.beginTransaction();
          inTransaction = true;
        }
        ProducerRecord<byte[], byte[]> record = parse(topic, line, lineNo);
        open.add(new Pending(index++, producer.send(record)));
        if (!transactional && open.size() >= 10_000) settle(producer, open, "plain", out);
      }
      if (transactional) {
        if (inTransaction) end(producer, open, transaction.equals("committed"), out);
      } else {
        settle(producer, open, "plain", out);
      }
    }
    out.flush();
    return 0;
  }

  /** Flushes, so every record of the transaction is in the log, then commits or aborts it. */
  private static void end(KafkaProducer<byte[], byte[]> producer, List<Pending> open, boolean commit, PrintStream out) throws Exception {
    producer.flush();
    List<RecordMetadata> acks = new ArrayList<>();
    for (Pending p : open) acks.add(p.ack().get());
    if (commit) producer.commitTransaction();
    else producer.abortTransaction();
    print(open, acks, commit ? "committed" : "aborted", out);
    open.clear();
  }

  private static void settle(KafkaProducer<byte[], byte[]> producer, List<Pending> open, String fate, PrintStream out) throws Exception {
    producer.flush();
    List<RecordMetadata> acks = new ArrayList<>();
    for (Pending p : open) acks.add(p.ack().get());
    print(open, acks, fate, out);
    open.clear();
  }

  private static void print(List<Pending> open, List<RecordMetadata> acks, String fate, PrintStream out) {
    for (int i = 0; i < open.size(); i++) {
      RecordMetadata m = acks.get(i);
      out.printf("sent\t%d\t%d\t%d\t%s%n", open.get(i).index(), m.partition(), m.offset(), fate);
    }
    out.flush();
  }

  private static ProducerRecord<byte[], byte[]> parse(String topic, String line, int lineNo) {
    String[] f = line.split("\t", -1);
    if (f.length != 5) throw new IllegalArgumentException("line " + lineNo + ": expected 5 tab-separated fields, got " + f.length);
    byte[] key = bytes(f[0]);
    byte[] value = bytes(f[1]);
    RecordHeaders headers = new RecordHeaders();
    if (!f[2].equals("-")) {
      for (String pair : f[2].split(",", -1)) {
        int colon = pair.indexOf(':');
        if (colon < 0) throw new IllegalArgumentException("line " + lineNo + ": header without ':'");
        String name = new String(Base64.getDecoder().decode(pair.substring(0, colon)), StandardCharsets.UTF_8);
        headers.add(new RecordHeader(name, bytes(pair.substring(colon + 1))));
      }
    }
    Integer partition = f[3].equals("-") ? null : Integer.valueOf(f[3]);
    Long timestamp = f[4].equals("-") ? null : Long.valueOf(f[4]);
    return new ProducerRecord<>(topic, partition, timestamp, key, value, headers);
  }

  private static byte[] bytes(String field) {
    return field.equals("-") ? null : Base64.getDecoder().decode(field);
  }

  private static String oneOf(String arg, String value, String... allowed) {
    for (String a : allowed) if (a.equals(value)) return value;
    throw new IllegalArgumentException(arg + " must be one of " + String.join(", ", allowed) + ", not " + value);
  }
}
