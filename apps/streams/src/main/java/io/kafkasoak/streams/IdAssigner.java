package io.kafkasoak.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.processor.api.RecordMetadata;
import org.apache.kafka.streams.state.KeyValueStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Assigns each key a stable id, {@code counter * partitions + partition}, as the originals of KAFKA-14172 and
 * KAFKA-14624 did: the per-partition counter lives in one store, the key's id and last seq in another, both
 * changelogged and (with a cache size above 0) cached. Every input record must carry the seq after the one the
 * store holds for its key; when it does not, the state read back is older than what was written, and the
 * processor writes an assertion record and logs {@code !!! BROKEN !!! Expected X but found Y partition: P}.
 *
 * <p>With {@code blobBytes} above 0 every record also writes a random string of that many bytes to an uncached
 * store of its own, as the quota reproduction's topology does: its changelog carries about blobBytes x records/s.
 *
 * <p>With {@code leakIterators} (bug switch {@code leak}) every record opens an iterator over the whole ids store and
 * never closes it, the classic RocksDB leak: the store keeps each open iterator until it is closed, with what the
 * iterator holds (RocksDB's native iterator, and with a cache the copy of the cached keys it iterates over).
 */
final class IdAssigner implements Processor<String, String, String, String> {
    static final String IDS_STORE = "ids";
    static final String COUNTER_STORE = "counter";
    static final String BLOBS_STORE = "blobs";
    static final String OUTPUT = "output";
    static final String ASSERTIONS = "assertions";

    private static final Logger LOG = LoggerFactory.getLogger(IdAssigner.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String COUNTER_KEY = "counter";

    private final int partitions;
    private final int instance;
    private final String step;
    private final int blobBytes;
    private final boolean leakIterators;
    private final java.util.Random random = new java.util.Random();
    private ProcessorContext<String, String> context;
    private KeyValueStore<String, String> ids;
    private KeyValueStore<String, Long> counter;
    private KeyValueStore<String, String> blobs;

    IdAssigner(int partitions, int instance, String step, int blobBytes, boolean leakIterators) {
        this.partitions = partitions;
        this.instance = instance;
        this.step = step;
        this.blobBytes = blobBytes;
        this.leakIterators = leakIterators;
    }

    @Override
    public void init(ProcessorContext<String, String> context) {
        this.context = context;
        this.ids = context.getStateStore(IDS_STORE);
        this.counter = context.getStateStore(COUNTER_STORE);
        this.blobs = blobBytes > 0 ? context.getStateStore(BLOBS_STORE) : null;
    }

    @Override
    public void process(Record<String, String> record) {
        JsonNode input = read(record.value());
        String key = record.key();
        long seq = input.get("seq").asLong();
        RecordMetadata where = context.recordMetadata().orElseThrow();
        int partition = where.partition();

        if (leakIterators) {
            ids.all();  // bug leak: never closed
        }
        String stored = ids.get(key);
        long assigned;
        long storedSeq;
        if (stored == null) {
            Long last = counter.get(COUNTER_KEY);
            long next = last == null ? 0 : last + 1;
            counter.put(COUNTER_KEY, next);
            assigned = next * partitions + partition;
            storedSeq = 0;
        } else {
            int colon = stored.indexOf(':');
            assigned = Long.parseLong(stored.substring(0, colon));
            storedSeq = Long.parseLong(stored.substring(colon + 1));
        }
        // What this instance writes is stamped with when it wrote it, as the reference worker's records are (Kafka
        // Streams would forward the input's timestamp): the report places each output, and each copy of a duplicate,
        // at that moment, after the fault that caused it, and its lag panel sees outputs fall behind their inputs.
        long now = System.currentTimeMillis();
        if (seq != storedSeq + 1) {
            SoakStreamsApp.BROKEN.incrementAndGet();
            LOG.error("!!! BROKEN !!! Expected {} but found {} partition: {} key: {}", storedSeq + 1, seq, partition, key);
            ObjectNode assertion = JSON.createObjectNode()
                .put("kind", "stale_state").put("key", key).put("expected", storedSeq + 1).put("found", seq)
                .put("partition", partition).put("instance", instance).put("step", step)
                .put("ts", now);
            context.forward(record.withValue(assertion.toString()).withTimestamp(now), ASSERTIONS);
        }
        ids.put(key, assigned + ":" + seq);
        if (blobs != null) {
            blobs.put(key, randomString(blobBytes));
        }
        ObjectNode output = JSON.createObjectNode()
            .put("id", input.get("id").asLong()).put("key", key).put("seq", seq).put("assigned_id", assigned)
            .put("instance", instance).put("in_partition", partition).put("in_offset", where.offset());
        context.forward(record.withValue(output.toString()).withTimestamp(now), OUTPUT);
        SoakStreamsApp.PROCESSED.incrementAndGet();
    }

    private String randomString(int length) {
        char[] chars = new char[length];
        for (int i = 0; i < length; i++) {
            chars[i] = (char) ('a' + random.nextInt(26));
        }
        return new String(chars);
    }

    private static JsonNode read(String value) {
        try {
            return JSON.readTree(value);
        } catch (java.io.IOException e) {
            throw new IllegalArgumentException("input record is not the data contract's JSON: " + value, e);
        }
    }
}
