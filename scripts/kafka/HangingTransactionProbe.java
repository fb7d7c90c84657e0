import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

/**
 * Finds what blocks read_committed consumers: partitions whose last stable offset lags the
 * high watermark, the open transactions behind that lag, and coordinator transactions
 * left open past their timeout. A partition is BLOCKED when an open transaction on it is
 * older than the threshold (by default the brokers' transaction.max.timeout.ms, past
 * which no healthy transaction can still be open): only an abort frees it.
 *
 * Run through scripts/kafka-probe.sh, which puts the broker's own kafka-clients on the
 * class path. Exit status: 0 nothing blocked, 1 something blocked or stuck, 2 the probe
 * itself failed.
 */
public final class HangingTransactionProbe {
  private record OpenTransaction(long producerId, int epoch, long startOffset, long ageMs, String coordinatorState) {}

  private record PartitionReport(TopicPartition partition, long lastStable, long highWatermark, List<OpenTransaction> open) {
    /** The committed frontier, read after the high watermark, has not reached it. */
    boolean lagging() {
      return lastStable < highWatermark;
    }
  }

  private record StuckTransaction(String transactionalId, long producerId, String state, long ageMs, long timeoutMs) {}

  private static String bootstrap = "127.0.0.1:9092";
  private static Set<String> onlyTopics = new TreeSet<>();
  private static long olderThanMs = -1;
  private static boolean json = false;

  public static void main(String[] args) {
    try {
      parseArgs(args);
      System.exit(run());
    } catch (IllegalArgumentException e) {
      System.err.println("kafka-probe: " + e.getMessage());
      System.err.println("usage: kafka-probe [--bootstrap-server HOST:PORT] [--topics A,B] [--older-than-ms N] [--json]");
      System.exit(2);
    } catch (Exception e) {
      System.err.println("kafka-probe: failed: " + e);
      System.exit(2);
    }
  }

  private static void parseArgs(String[] args) {
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      switch (arg) {
        case "--json" -> json = true;
        case "--bootstrap-server", "--topics", "--older-than-ms" -> {
          if (i + 1 >= args.length) throw new IllegalArgumentException(arg + " needs a value");
          String value = args[++i];
          if (arg.equals("--bootstrap-server")) bootstrap = value;
          else if (arg.equals("--topics")) onlyTopics = Set.of(value.split(",")).stream().map(String::trim).filter(s -> !s.isEmpty()).collect(Collectors.toCollection(TreeSet::new));
          else {
            try {
              olderThanMs = Long.parseLong(value);
            } catch (NumberFormatException e) {
              throw new IllegalArgumentException("--older-than-ms must be a whole number, got " + value);
            }
          }
        }
        default -> throw new IllegalArgumentException("unknown argument " + arg);
      }
    }
  }

  private static int run() throws Exception {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
    try (Admin admin = Admin.create(props)) {
      long now = System.currentTimeMillis();
      long threshold = olderThanMs >= 0 ? olderThanMs : maxTransactionTimeoutMs(admin);
      Set<String> topics = onlyTopics.isEmpty() ? new TreeSet<>(admin.listTopics().names().get()) : onlyTopics;
      List<TopicPartition> partitions = new ArrayList<>();
      for (TopicDescription d : admin.describeTopics(topics).allTopicNames().get().values()) {
        d.partitions().forEach(p -> partitions.add(new TopicPartition(d.name(), p.partition())));
      }
      // High watermarks first: on a partition still being written, the last stable offset
      // read afterwards reaches that mark unless a transaction holds it back. Read in the
      // other order, every write in between would look like lag.
      Map<TopicPartition, Long> high = offsets(admin, partitions, IsolationLevel.READ_UNCOMMITTED);
      Map<TopicPartition, Long> lastStable = offsets(admin, partitions, IsolationLevel.READ_COMMITTED);

      Collection<TransactionListing> listings = admin.listTransactions().all().get();
      Map<Long, String> coordinatorStateByProducer = new HashMap<>();
      listings.forEach(l -> coordinatorStateByProducer.put(l.producerId(), l.state().toString()));

      List<TopicPartition> lagging = partitions.stream().filter(tp -> lastStable.get(tp) < high.get(tp)).toList();
      Map<TopicPartition, PartitionProducerState> producers = lagging.isEmpty() ? Map.of() : admin.describeProducers(lagging).all().get();
      List<PartitionReport> reports = new ArrayList<>();
      for (TopicPartition tp : partitions) {
        List<OpenTransaction> open = new ArrayList<>();
        PartitionProducerState state = producers.get(tp);
        if (state != null) {
          for (ProducerState p : state.activeProducers()) {
            OptionalLong start = p.currentTransactionStartOffset();
            if (start.isEmpty()) continue;
            open.add(new OpenTransaction(p.producerId(), p.producerEpoch(), start.getAsLong(), now - p.lastTimestamp(),
                coordinatorStateByProducer.getOrDefault(p.producerId(), "unknown")));
          }
        }
        reports.add(new PartitionReport(tp, lastStable.get(tp), high.get(tp), open));
      }

      List<StuckTransaction> stuck = new ArrayList<>();
      List<String> ongoing = listings.stream().filter(l -> l.state() == TransactionState.ONGOING).map(TransactionListing::transactionalId).toList();
      if (!ongoing.isEmpty()) {
        for (Map.Entry<String, TransactionDescription> e : admin.describeTransactions(ongoing).all().get().entrySet()) {
          TransactionDescription t = e.getValue();
          if (t.transactionStartTimeMs().isEmpty()) continue;
          long age = now - t.transactionStartTimeMs().getAsLong();
          if (age > t.transactionTimeoutMs()) stuck.add(new StuckTransaction(e.getKey(), t.producerId(), t.state().toString(), age, t.transactionTimeoutMs()));
        }
      }

      long blocked = reports.stream().filter(r -> isBlocked(r, threshold)).count();
      long laggingCount = reports.stream().filter(PartitionReport::lagging).count();
      if (json) printJson(reports, stuck, threshold, blocked, laggingCount);
      else printText(reports, stuck, threshold, blocked, laggingCount, topics.size());
      return blocked > 0 || !stuck.isEmpty() ? 1 : 0;
    }
  }

  private static boolean isBlocked(PartitionReport r, long threshold) {
    return r.lagging() && r.open().stream().anyMatch(o -> o.ageMs() > threshold);
  }

  /** The largest transaction timeout any broker allows; a transaction open longer than that is not healthy. */
  private static long maxTransactionTimeoutMs(Admin admin) throws Exception {
    long max = 900_000;
    List<ConfigResource> brokers = admin.describeCluster().nodes().get().stream()
        .map(n -> new ConfigResource(ConfigResource.Type.BROKER, String.valueOf(n.id()))).toList();
    for (Config config : admin.describeConfigs(brokers).all().get().values()) {
      ConfigEntry entry = config.get("transaction.max.timeout.ms");
      if (entry != null && entry.value() != null) max = Long.parseLong(entry.value());
    }
    return max;
  }

  private static Map<TopicPartition, Long> offsets(Admin admin, List<TopicPartition> partitions, IsolationLevel level) throws Exception {
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    partitions.forEach(tp -> latest.put(tp, OffsetSpec.latest()));
    Map<TopicPartition, Long> out = new HashMap<>();
    admin.listOffsets(latest, new ListOffsetsOptions(level)).all().get().forEach((tp, info) -> out.put(tp, info.offset()));
    return out;
  }

  private static void printText(List<PartitionReport> reports, List<StuckTransaction> stuck, long threshold, long blocked, long lagging, int topics) {
    System.out.printf("kafka-probe: %s, %d partitions in %d topics at %s, threshold %d ms%n", bootstrap, reports.size(), topics, Instant.now(), threshold);
    for (PartitionReport r : reports) {
      if (!r.lagging()) continue;
      String verdict = isBlocked(r, threshold) ? "BLOCKED" : "LAGGING";
      System.out.printf("%-8s %s last stable offset %d < high watermark %d%n", verdict, r.partition(), r.lastStable(), r.highWatermark());
      for (OpenTransaction o : r.open()) {
        System.out.printf("         open transaction of producer %d (epoch %d) since offset %d, last written %d ms ago; coordinator: %s%n",
            o.producerId(), o.epoch(), o.startOffset(), o.ageMs(), o.coordinatorState());
      }
    }
    for (StuckTransaction s : stuck) {
      System.out.printf("STUCK    transactional id %s (producer %d) %s for %d ms, past its %d ms timeout%n", s.transactionalId(), s.producerId(), s.state(), s.ageMs(), s.timeoutMs());
    }
    System.out.printf("kafka-probe: %d blocked, %d lagging, %d stuck transactions%n", blocked, lagging, stuck.size());
    if (blocked > 0) System.out.println("kafka-probe: free a blocked partition with kafka-transactions.sh abort --topic T --partition P --start-offset O");
  }

  private static void printJson(List<PartitionReport> reports, List<StuckTransaction> stuck, long threshold, long blocked, long lagging) {
    StringBuilder out = new StringBuilder();
    out.append("{\"thresholdMs\":").append(threshold).append(",\"blocked\":").append(blocked).append(",\"lagging\":").append(lagging).append(",\"partitions\":[");
    for (int i = 0; i < reports.size(); i++) {
      PartitionReport r = reports.get(i);
      if (i > 0) out.append(',');
      out.append("{\"topic\":").append(quote(r.partition().topic())).append(",\"partition\":").append(r.partition().partition())
          .append(",\"lastStableOffset\":").append(r.lastStable()).append(",\"highWatermark\":").append(r.highWatermark())
          .append(",\"blocked\":").append(isBlocked(r, threshold)).append(",\"openTransactions\":[");
      for (int j = 0; j < r.open().size(); j++) {
        OpenTransaction o = r.open().get(j);
        if (j > 0) out.append(',');
        out.append("{\"producerId\":").append(o.producerId()).append(",\"epoch\":").append(o.epoch()).append(",\"startOffset\":").append(o.startOffset())
            .append(",\"ageMs\":").append(o.ageMs()).append(",\"coordinatorState\":").append(quote(o.coordinatorState())).append('}');
      }
      out.append("]}");
    }
    out.append("],\"stuckTransactions\":[");
    for (int i = 0; i < stuck.size(); i++) {
      StuckTransaction s = stuck.get(i);
      if (i > 0) out.append(',');
      out.append("{\"transactionalId\":").append(quote(s.transactionalId())).append(",\"producerId\":").append(s.producerId())
          .append(",\"state\":").append(quote(s.state())).append(",\"ageMs\":").append(s.ageMs()).append(",\"timeoutMs\":").append(s.timeoutMs()).append('}');
    }
    out.append("]}");
    System.out.println(out);
  }

  private static String quote(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') out.append('\\').append(c);
      else if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
      else out.append(c);
    }
    return out.append('"').toString();
  }
}
