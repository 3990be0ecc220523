package io.kafkasoak.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.api.FixedKeyProcessor;
import org.apache.kafka.streams.processor.api.FixedKeyProcessorContext;
import org.apache.kafka.streams.processor.api.FixedKeyRecord;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A count and a sum per key in one DSL aggregation, a RocksDB store with its changelog: the state that KAFKA-20685
 * (aborted writes surviving in RocksDB after a crash) and KAFKA-17635 (repartition records purged before their
 * commit) corrupt. Each input is the JSON {@code {"id", "seq", "amount", "payload"}} the generator writes; each
 * update of a key goes out as its count (decimal text) to {@code SOAK_COUNTS_TOPIC} and its sum of {@code amount} to
 * {@code SOAK_SUMS_TOPIC}, tables the checker judges with the {@code aggregate} contract.
 *
 * <p>With {@code repartition}, the stream is re-keyed (to the same key) before it is grouped, so every record goes
 * through the internal topic {@code <application.id>-rekeyed-repartition}, which Kafka Streams writes, reads back and
 * purges (repartition.purge.interval.ms).
 */
final class AggregateTopology {
    static final String STORE = "totals";
    static final String REKEYED = "rekeyed";  // the repartition topic: <application.id>-rekeyed-repartition
    private static final ObjectMapper JSON = new ObjectMapper();

    private AggregateTopology() {
    }

    static Topology build(boolean repartition, boolean cached) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, String> input = builder.stream(SoakStreamsApp.env("SOAK_INPUT_TOPIC"),
            Consumed.with(Serdes.String(), Serdes.String()));
        KStream<String, String> keyed = repartition ? input.selectKey((key, value) -> key) : input;
        Materialized<String, String, KeyValueStore<Bytes, byte[]>> store =
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(STORE)
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String());
        KTable<String, String> totals = keyed
            .groupByKey(Grouped.with(REKEYED, Serdes.String(), Serdes.String()))
            .aggregate(() -> "0:0", AggregateTopology::add, cached ? store.withCachingEnabled()
                : store.withCachingDisabled());
        KStream<String, String> updates = totals.toStream();
        Produced<String, String> produced = Produced.with(Serdes.String(), Serdes.String());
        updates.processValues(() -> new Part(true)).to(SoakStreamsApp.env("SOAK_COUNTS_TOPIC"), produced);
        updates.processValues(() -> new Part(false)).to(SoakStreamsApp.env("SOAK_SUMS_TOPIC"), produced);
        return builder.build();
    }

    /**
     * One part of a key's total ({@code count:sum}), stamped with when the instance wrote it, as {@link IdAssigner}'s
     * outputs are (the DSL would forward the input's timestamp): the report draws each update when it was written.
     */
    private static final class Part implements FixedKeyProcessor<String, String, String> {
        private final boolean count;
        private FixedKeyProcessorContext<String, String> context;

        Part(boolean count) {
            this.count = count;
        }

        @Override
        public void init(FixedKeyProcessorContext<String, String> context) {
            this.context = context;
        }

        @Override
        public void process(FixedKeyRecord<String, String> record) {
            String total = record.value();
            int colon = total.indexOf(':');
            String part = count ? total.substring(0, colon) : total.substring(colon + 1);
            context.forward(record.withValue(part).withTimestamp(System.currentTimeMillis()));
        }
    }

    /** The key's total ({@code count:sum}) with one more input. */
    private static String add(String key, String value, String total) {
        long amount;
        try {
            amount = JSON.readTree(value).path("amount").asLong();
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("input record is not the aggregation's JSON: " + value, e);
        }
        int colon = total.indexOf(':');
        SoakStreamsApp.PROCESSED.incrementAndGet();
        return (Long.parseLong(total.substring(0, colon)) + 1) + ":" + (Long.parseLong(total.substring(colon + 1))
            + amount);
    }
}
