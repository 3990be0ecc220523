package com.example.orders;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Enriches orders and keeps each customer's order count and order total. */
public final class OrdersApp {
    private static final Logger LOG = LoggerFactory.getLogger(OrdersApp.class);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(20);
    private static final Set<String> REQUIRED = Set.of("config", "input", "enriched", "count", "total");
    private static final String USAGE = "usage: OrdersApp --config <file> --input <topic> --enriched <topic> "
        + "--count <topic> --total <topic> [--fault drop,double-count]";

    private OrdersApp() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = parse(args);
        Set<OrdersTopology.Fault> faults = faults(options.getOrDefault("fault", ""));
        Topology topology = OrdersTopology.build(options.get("input"), options.get("enriched"), options.get("count"),
            options.get("total"), faults);
        LOG.info("starting with faults={}\n{}", faults, topology.describe());

        KafkaStreams streams = new KafkaStreams(topology, config(Path.of(options.get("config"))));
        CountDownLatch stopped = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            LOG.info("state {} -> {}", before, now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                stopped.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(error -> {
            LOG.error("stream thread failed, shutting the client down", error);
            return StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            LOG.info("shutting down");
            if (!streams.close(CLOSE_TIMEOUT)) {
                LOG.warn("did not close within {}", CLOSE_TIMEOUT);
            }
        }, "orders-shutdown"));

        streams.start();
        stopped.await();
        if (streams.state() == KafkaStreams.State.ERROR) {
            LOG.error("Kafka Streams is in state ERROR, exiting");
            streams.close(CLOSE_TIMEOUT);
            System.exit(1);
        }
    }

    /** The properties file as given, with the defaults this app wants where the file says nothing. */
    static Properties config(Path file) throws IOException {
        Properties props = new Properties();
        try (InputStream in = Files.newInputStream(file)) {
            props.load(in);
        }
        props.putIfAbsent(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        props.putIfAbsent(StreamsConfig.STATE_DIR_CONFIG, Path.of("state").toAbsolutePath().toString());
        return props;
    }

    static Map<String, String> parse(String[] args) {
        Map<String, String> options = new HashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                usage("unexpected argument " + args[i]);
            }
            options.put(args[i].substring(2), args[i + 1]);
        }
        for (String name : REQUIRED) {
            if (!options.containsKey(name)) {
                usage("missing --" + name);
            }
        }
        return options;
    }

    static Set<OrdersTopology.Fault> faults(String names) {
        Set<OrdersTopology.Fault> faults = EnumSet.noneOf(OrdersTopology.Fault.class);
        for (String name : names.split(",")) {
            if (name.isBlank()) {
                continue;
            }
            try {
                faults.add(OrdersTopology.Fault.valueOf(name.strip().toUpperCase().replace('-', '_')));
            } catch (IllegalArgumentException e) {
                usage("unknown fault " + name);
            }
        }
        return faults;
    }

    static void usage(String problem) {
        System.err.println(problem + "\n" + USAGE);
        System.exit(2);
    }
}
