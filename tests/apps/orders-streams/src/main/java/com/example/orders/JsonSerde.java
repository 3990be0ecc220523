package com.example.orders;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.Serializer;

/** JSON values with Jackson. */
final class JsonSerde {
    private static final ObjectMapper MAPPER = new ObjectMapper()
        .configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

    private JsonSerde() {
    }

    static <T> Serde<T> of(Class<T> type) {
        Serializer<T> serializer = (topic, value) -> {
            try {
                return value == null ? null : MAPPER.writeValueAsBytes(value);
            } catch (IOException e) {
                throw new SerializationException("cannot write " + type.getSimpleName() + " to " + topic, e);
            }
        };
        Deserializer<T> deserializer = (topic, bytes) -> {
            try {
                return bytes == null ? null : MAPPER.readValue(bytes, type);
            } catch (IOException e) {
                throw new SerializationException("cannot read " + type.getSimpleName() + " from " + topic, e);
            }
        };
        return Serdes.serdeFrom(serializer, deserializer);
    }
}
