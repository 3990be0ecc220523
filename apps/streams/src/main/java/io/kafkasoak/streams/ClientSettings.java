package io.kafkasoak.streams;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.util.Iterator;
import java.util.Map;
import java.util.Properties;

/**
 * The run's client security settings, handed to every app as {@code SOAK_KAFKA_CONFIG} (JSON, librdkafka names),
 * in the Java client's names: {@code sasl.mechanisms} becomes {@code sasl.mechanism}, {@code sasl.username} and
 * {@code sasl.password} a JAAS line for PLAIN or SCRAM, {@code ssl.ca.location} a PEM trust store; settings the two
 * clients name alike pass as they are.
 */
final class ClientSettings {
    private ClientSettings() {
    }

    static Properties fromEnvironment() throws IOException {
        Properties props = new Properties();
        String raw = System.getenv("SOAK_KAFKA_CONFIG");
        if (raw == null || raw.isBlank()) {
            return props;
        }
        JsonNode settings = new ObjectMapper().readTree(raw);
        String user = null;
        String password = null;
        for (Iterator<Map.Entry<String, JsonNode>> it = settings.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> entry = it.next();
            String value = entry.getValue().asText();
            switch (entry.getKey()) {
                case "bootstrap.servers" -> { }
                case "sasl.mechanisms", "sasl.mechanism" -> props.put("sasl.mechanism", value);
                case "sasl.username" -> user = value;
                case "sasl.password" -> password = value;
                case "ssl.ca.location" -> {
                    props.put("ssl.truststore.location", value);
                    props.put("ssl.truststore.type", "PEM");
                }
                default -> props.put(entry.getKey(), value);
            }
        }
        if (user != null) {
            String module = props.getProperty("sasl.mechanism", "PLAIN").startsWith("SCRAM")
                ? "org.apache.kafka.common.security.scram.ScramLoginModule"
                : "org.apache.kafka.common.security.plain.PlainLoginModule";
            props.put("sasl.jaas.config", module + " required username=\"" + escape(user) + "\" password=\""
                + escape(password == null ? "" : password) + "\";");
        }
        return props;
    }

    private static String escape(String value) {
        return value.replace("\\", "\\\\").replace("\"", "\\\"");
    }
}
