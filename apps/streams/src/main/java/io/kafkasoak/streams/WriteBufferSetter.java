package io.kafkasoak.streams;

import java.util.Map;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.rocksdb.Options;

/**
 * Sizes every RocksDB store's write buffer (memtable) to {@code soak.rocksdb.write.buffer.bytes}: a small one flushes
 * what the store was given to its files every few hundred records, open transaction or not, the condition under
 * which KAFKA-20685's aborted writes outlive a crash.
 */
public final class WriteBufferSetter implements RocksDBConfigSetter {
    static final String BYTES = "soak.rocksdb.write.buffer.bytes";

    @Override
    public void setConfig(String storeName, Options options, Map<String, Object> configs) {
        options.setWriteBufferSize(Long.parseLong(String.valueOf(configs.get(BYTES))));
    }

    @Override
    public void close(String storeName, Options options) {
        // Nothing allocated: the size is a number on the store's own Options.
    }
}
