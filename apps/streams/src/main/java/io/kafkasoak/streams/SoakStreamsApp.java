package io.kafkasoak.streams;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.StoreBuilder;
import org.apache.kafka.streams.state.Stores;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Kafka Streams reference app of kafka-soak, under exactly_once_v2, in whatever Kafka Streams version it was built
 * against, with one of four topologies ({@code --topology}): the id assignment of the KAFKA-14172 and KAFKA-14624
 * reproductions ({@link IdAssigner}), the workflow engine of the rollback reproduction ({@link WorkflowTopology},
 * in the design {@code --design} names, with its topics in {@code SOAK_EXECUTIONS_TOPIC}, {@code SOAK_TASKS_TOPIC}
 * and {@code SOAK_RESULTS_TOPIC}), or a count and sum per key ({@link AggregateTopology}: {@code aggregate}, or
 * {@code repartition} through an internal repartition topic; its tables in {@code SOAK_COUNTS_TOPIC} and
 * {@code SOAK_SUMS_TOPIC}).
 *
 * <p>The run's names come from the data contract's environment ({@code SOAK_BOOTSTRAP_SERVERS}, {@code SOAK_APP_ID},
 * {@code SOAK_INSTANCE}, {@code SOAK_STEP}, {@code SOAK_INPUT_TOPIC}, {@code SOAK_OUTPUT_TOPIC},
 * {@code SOAK_ASSERTIONS_TOPIC}); what the originals varied comes as options. SIGTERM is a graceful stop
 * ({@code KafkaStreams.close()}); every state transition and the tasks each thread holds are logged, and a
 * progress line every five seconds.
 */
public final class SoakStreamsApp {
    private static final Logger LOG = LoggerFactory.getLogger(SoakStreamsApp.class);
    private static final long REPORT_EVERY_MS = 5_000;
    private static final long CLOSE_TIMEOUT_S = 20;
    private static final Map<String, String> DEFAULTS = Map.ofEntries(
        Map.entry("threads", "1"), Map.entry("standbys", "0"), Map.entry("cache-max-bytes", "0"),
        Map.entry("acceptable-recovery-lag", "10000"), Map.entry("max-warmup-replicas", "2"),
        Map.entry("commit-interval-ms", "100"), Map.entry("partitions", "1"), Map.entry("state-dir", "state"),
        Map.entry("blob-bytes", "0"), Map.entry("session-timeout-ms", "45000"), Map.entry("topology", "id-assignment"),
        Map.entry("design", WorkflowTopology.SELF_JOIN), Map.entry("parallel-tasks", "3"),
        Map.entry("write-buffer-bytes", "0"), Map.entry("config", ""), Map.entry("bug", "none"));
    static final AtomicLong PROCESSED = new AtomicLong();
    static final AtomicLong BROKEN = new AtomicLong();

    private SoakStreamsApp() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = options(args);
        int instance = Integer.parseInt(env("SOAK_INSTANCE"));
        String step = System.getenv().getOrDefault("SOAK_STEP", "0");
        int partitions = Integer.parseInt(options.get("partitions"));

        KafkaStreams streams = new KafkaStreams(topology(partitions, instance, step, options), config(options));
        CountDownLatch closed = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            LOG.info("state {} -> {}{}", before, now, now == KafkaStreams.State.RUNNING ? tasks(streams) : "");
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                closed.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(error -> {
            LOG.error("stream thread {} died: {}; replacing it", Thread.currentThread().getName(), error, error);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("stopping gracefully: KafkaStreams.close()");
            // Shorter than the suite's stop timeout (30 s, then SIGKILL), so a close that hangs is said here.
            boolean done = streams.close(Duration.ofSeconds(CLOSE_TIMEOUT_S));
            if (done) {
                LOG.info("closed cleanly: processed {} records, {} assertions", PROCESSED.get(),
                    BROKEN.get());
            } else {
                LOG.warn("close() did not finish within {} s: processed {} records, {} assertions", CLOSE_TIMEOUT_S,
                    PROCESSED.get(), BROKEN.get());
            }
        }, "soak-shutdown"));

        LOG.info("instance {} of {} started at step {}: Kafka Streams {}, {}", instance, env("SOAK_APP_ID"), step,
            kafkaVersion(), options);
        streams.start();
        long lastCount = 0;
        long lastAt = System.currentTimeMillis();
        while (!closed.await(REPORT_EVERY_MS, java.util.concurrent.TimeUnit.MILLISECONDS)) {
            long count = PROCESSED.get();
            long at = System.currentTimeMillis();
            LOG.info("processed {} records ({} records/s), state {}", count,
                (count - lastCount) * 1000 / Math.max(1, at - lastAt), streams.state());
            lastCount = count;
            lastAt = at;
        }
        if (streams.state() == KafkaStreams.State.ERROR) {
            LOG.error("Kafka Streams is in state ERROR: every stream thread is gone");
            System.exit(1);
        }
    }

    static Topology topology(int partitions, int instance, String step, Map<String, String> options) {
        String kind = options.get("topology");
        if ("workflow".equals(kind)) {
            return new WorkflowTopology(instance, Integer.parseInt(options.get("parallel-tasks")), partitions)
                .build(options.get("design"));
        }
        boolean cached = Long.parseLong(options.get("cache-max-bytes")) > 0;
        if ("aggregate".equals(kind) || "repartition".equals(kind)) {
            return AggregateTopology.build("repartition".equals(kind), cached);
        }
        if (!"id-assignment".equals(kind)) {
            throw new IllegalArgumentException("unknown topology " + kind
                + "; topologies: id-assignment, workflow, aggregate, repartition");
        }
        Topology topology = new Topology();
        topology.addSource("input", Serdes.String().deserializer(), Serdes.String().deserializer(),
            env("SOAK_INPUT_TOPIC"));
        int blobBytes = Integer.parseInt(options.get("blob-bytes"));
        String bug = options.get("bug");
        if (!"none".equals(bug) && !"leak".equals(bug)) {
            throw new IllegalArgumentException("unknown bug " + bug + "; bugs: none, leak");
        }
        boolean leak = "leak".equals(bug);
        topology.addProcessor("assign", () -> new IdAssigner(partitions, instance, step, blobBytes, leak), "input");
        topology.addStateStore(cached(Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore(IdAssigner.IDS_STORE), Serdes.String(), Serdes.String()), cached), "assign");
        topology.addStateStore(cached(Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore(IdAssigner.COUNTER_STORE), Serdes.String(), Serdes.Long()), cached), "assign");
        if (blobBytes > 0) {  // the quota reproduction's store: every record writes blobBytes to its changelog
            topology.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(IdAssigner.BLOBS_STORE),
                Serdes.String(), Serdes.String()).withCachingDisabled(), "assign");
        }
        topology.addSink(IdAssigner.OUTPUT, env("SOAK_OUTPUT_TOPIC"), Serdes.String().serializer(),
            Serdes.String().serializer(), "assign");
        topology.addSink(IdAssigner.ASSERTIONS, env("SOAK_ASSERTIONS_TOPIC"), Serdes.String().serializer(),
            Serdes.String().serializer(), "assign");
        return topology;
    }

    private static <T extends KeyValueStore<?, ?>> StoreBuilder<T> cached(StoreBuilder<T> builder, boolean cached) {
        return cached ? builder.withCachingEnabled() : builder.withCachingDisabled();
    }

    static Properties config(Map<String, String> options) throws java.io.IOException {
        Properties props = ClientSettings.fromEnvironment();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, env("SOAK_APP_ID"));
        props.put(StreamsConfig.CLIENT_ID_CONFIG, env("SOAK_APP_ID") + "-" + env("SOAK_INSTANCE"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, env("SOAK_BOOTSTRAP_SERVERS"));
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATE_DIR_CONFIG, options.get("state-dir"));
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, options.get("threads"));
        props.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, options.get("standbys"));
        props.put(StreamsConfig.ACCEPTABLE_RECOVERY_LAG_CONFIG, options.get("acceptable-recovery-lag"));
        props.put(StreamsConfig.MAX_WARMUP_REPLICAS_CONFIG, options.get("max-warmup-replicas"));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, options.get("commit-interval-ms"));
        // Renamed in 3.4 (KIP-863); the old name is gone in 4.0.
        String cacheConfig = StreamsConfig.configDef().names().contains("statestore.cache.max.bytes")
            ? "statestore.cache.max.bytes" : "cache.max.bytes.buffering";
        props.put(cacheConfig, options.get("cache-max-bytes"));
        props.put("consumer.auto.offset.reset", "earliest");
        if (Long.parseLong(options.get("write-buffer-bytes")) > 0) {
            props.put(StreamsConfig.ROCKSDB_CONFIG_SETTER_CLASS_CONFIG, WriteBufferSetter.class.getName());
            props.put(WriteBufferSetter.BYTES, options.get("write-buffer-bytes"));
        }
        // The group consumer's session, and a heartbeat every third of it (Kafka's own advice for the two).
        int session = Integer.parseInt(options.get("session-timeout-ms"));
        props.put("main.consumer.session.timeout.ms", String.valueOf(session));
        props.put("main.consumer.heartbeat.interval.ms", String.valueOf(Math.min(3000, session / 3)));
        // A variant's own Kafka Streams settings ("name=value;..."), last: they win over the above.
        for (String pair : options.get("config").split(";")) {
            if (!pair.isBlank()) {
                String[] parts = pair.split("=", 2);
                props.put(parts[0], parts.length > 1 ? parts[1] : "");
            }
        }
        return props;
    }

    private static String tasks(KafkaStreams streams) {
        TreeSet<String> active = new TreeSet<>();
        TreeSet<String> standby = new TreeSet<>();
        for (ThreadMetadata thread : streams.metadataForLocalThreads()) {
            thread.activeTasks().stream().map(TaskMetadata::taskId).map(Object::toString).forEach(active::add);
            thread.standbyTasks().stream().map(TaskMetadata::taskId).map(Object::toString).forEach(standby::add);
        }
        return ": active tasks " + active + ", standby tasks " + standby;
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> options = new HashMap<>(DEFAULTS);
        for (int i = 0; i < args.length; i += 2) {
            String name = args[i].startsWith("--") ? args[i].substring(2) : "";
            if (!DEFAULTS.containsKey(name) || i + 1 >= args.length) {
                throw new IllegalArgumentException("unknown option or missing value: " + args[i] + "; options: "
                    + new TreeSet<>(DEFAULTS.keySet()));
            }
            options.put(name, args[i + 1]);
        }
        return options;
    }

    /** The Kafka release on the classpath, from the properties file every kafka-clients jar carries (the class that
     *  reads it, AppInfoParser, moved to an internal package in 4.4). */
    static String kafkaVersion() {
        try (java.io.InputStream in = SoakStreamsApp.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in == null) {
                return "unknown";
            }
            Properties version = new Properties();
            version.load(in);
            return version.getProperty("version", "unknown");
        } catch (java.io.IOException e) {
            return "unknown";
        }
    }

    static String env(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            throw new IllegalStateException("environment variable " + name + " is not set (the data contract)");
        }
        return value;
    }
}
