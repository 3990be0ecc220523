package io.kafkasoak.streams;

import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Repartitioned;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * The two designs of the workflow engine ({@link Workflow}) the rollback reproduction compares, each with the worker
 * role (task orders become results) in the same app.
 *
 * <ul>
 *   <li>{@code ktable-self-join}, the original's: the executions topic is read back as a KTable; worker results are
 *   joined with it and written back to the same topic, and every change of the table decides the next step. A
 *   version the app wrote is in the table only once it has been committed and consumed again, so two results of one
 *   execution that arrive close together are both applied to the same older version: the second write loses the
 *   first one's change.</li>
 *   <li>{@code single-writer}: new executions (repartitioned by execution id) and worker results meet in one
 *   processor that keeps each execution in its own store, applies every change to the latest version and writes the
 *   topic only as a log. One writer per execution, reading what it wrote: nothing to roll back.</li>
 * </ul>
 */
final class WorkflowTopology {
    static final String SELF_JOIN = "ktable-self-join";
    static final String SINGLE_WRITER = "single-writer";
    static final String STORE = "executions";

    private static final Serde<String> TEXT = Serdes.String();
    private static final Consumed<String, String> READ = Consumed.with(TEXT, TEXT);
    private static final Produced<String, String> WRITE = Produced.with(TEXT, TEXT);

    private final int instance;
    private final int parallelTasks;
    private final int partitions;
    private final String executions = SoakStreamsApp.env("SOAK_EXECUTIONS_TOPIC");

    WorkflowTopology(int instance, int parallelTasks, int partitions) {
        this.instance = instance;
        this.parallelTasks = parallelTasks;
        this.partitions = partitions;
    }

    Topology build(String design) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> created = builder.stream(SoakStreamsApp.env("SOAK_INPUT_TOPIC"), READ)
            .process(() -> new Creator(instance));
        KStream<String, String> results = builder.stream(SoakStreamsApp.env("SOAK_RESULTS_TOPIC"), READ);
        KStream<String, String> versions;
        if (SELF_JOIN.equals(design)) {
            KTable<String, String> table = builder.table(executions, READ,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(STORE).withKeySerde(TEXT).withValueSerde(TEXT));
            created.to(executions, WRITE);
            results.join(table, (result, execution) -> Workflow.apply(execution, result, instance)).to(executions, WRITE);
            versions = table.toStream();
            versions.mapValues(v -> Workflow.advance(v, parallelTasks, instance)).filter((k, v) -> v != null)
                .to(executions, WRITE);
        } else if (SINGLE_WRITER.equals(design)) {
            builder.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(STORE), TEXT, TEXT));
            versions = created.repartition(Repartitioned.<String, String>as("created").withKeySerde(TEXT).withValueSerde(TEXT)
                    .withNumberOfPartitions(partitions))
                .merge(results)
                .process(() -> new SingleWriter(instance, parallelTasks), STORE);
            versions.to(executions, WRITE);
        } else {
            throw new IllegalArgumentException("unknown workflow design " + design + "; designs: " + SELF_JOIN + ", "
                + SINGLE_WRITER);
        }
        versions.flatMapValues(v -> Workflow.orders(v, parallelTasks)).to(SoakStreamsApp.env("SOAK_TASKS_TOPIC"), WRITE);
        versions.filter((k, v) -> Workflow.finishing(v)).mapValues(v -> Workflow.end(v, instance))
            .to(SoakStreamsApp.env("SOAK_OUTPUT_TOPIC"), WRITE);
        builder.stream(SoakStreamsApp.env("SOAK_TASKS_TOPIC"), READ).flatMapValues(order -> Workflow.work(order, instance))
            .to(SoakStreamsApp.env("SOAK_RESULTS_TOPIC"), WRITE);
        return builder.build();
    }

    /** An input record becomes a new execution, keyed by its id, remembering where its input was. */
    private static final class Creator implements Processor<String, String, String, String> {
        private final int instance;
        private ProcessorContext<String, String> context;

        Creator(int instance) {
            this.instance = instance;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(Record<String, String> record) {
            RecordMetadata where = context.recordMetadata().orElseThrow();
            var execution = Workflow.created(Workflow.read(record.value()), instance, where.partition(), where.offset());
            context.forward(record.withKey(execution.get("id").asText()).withValue(execution.toString()));
            SoakStreamsApp.PROCESSED.incrementAndGet();
        }
    }

    /** Keeps every execution in its store and forwards each version it commits, in order. */
    private static final class SingleWriter implements Processor<String, String, String, String> {
        private final int instance;
        private final int parallelTasks;
        private ProcessorContext<String, String> context;
        private KeyValueStore<String, String> store;

        SingleWriter(int instance, int parallelTasks) {
            this.instance = instance;
            this.parallelTasks = parallelTasks;
        }

        @Override
        public void init(ProcessorContext<String, String> context) {
            this.context = context;
            this.store = context.getStateStore(STORE);
        }

        @Override
        public void process(Record<String, String> record) {
            String version = record.value();
            if (Workflow.isResult(version)) {
                String current = store.get(record.key());
                if (current == null) {
                    throw new IllegalStateException("a worker result for execution " + record.key()
                        + " that this store does not hold: " + version);
                }
                version = Workflow.apply(current, version, instance);
            }
            while (version != null) {  // each version, then the one its next step makes of it
                store.put(record.key(), version);
                context.forward(record.withValue(version));
                version = Workflow.advance(version, parallelTasks, instance);
            }
        }
    }
}
