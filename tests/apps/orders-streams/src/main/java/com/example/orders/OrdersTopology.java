package com.example.orders;

import java.util.List;
import java.util.Set;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/** The orders topology: every order enriched, and per customer the number of orders and their total amount. */
final class OrdersTopology {
    /** Planted defects, for testing the tests: the order with this id is dropped or counted twice. */
    static final long FAULTY_ORDER = 77;

    enum Fault {
        DROP, DOUBLE_COUNT
    }

    record Order(long orderId, String customer, long amount, long seq) {
    }

    record EnrichedOrder(long orderId, String customer, long amount, long seq, long amountCents, String enrichedBy) {
        static EnrichedOrder of(Order order) {
            return new EnrichedOrder(order.orderId(), order.customer(), order.amount(), order.seq(),
                order.amount() * 100, "orders-streams");
        }
    }

    record Total(long total) {
    }

    private static final Serde<String> KEYS = Serdes.String();
    private static final Serde<Order> ORDERS = JsonSerde.of(Order.class);
    private static final Serde<EnrichedOrder> ENRICHED = JsonSerde.of(EnrichedOrder.class);
    private static final Serde<Total> TOTALS = JsonSerde.of(Total.class);

    private OrdersTopology() {
    }

    static Topology build(String input, String enriched, String count, String total, Set<Fault> faults) {
        StreamsBuilder builder = new StreamsBuilder();
        KStream<String, Order> orders = builder.stream(input, Consumed.with(KEYS, ORDERS));

        orders.filter((customer, order) -> !(faults.contains(Fault.DROP) && order.orderId() == FAULTY_ORDER))
            .mapValues(EnrichedOrder::of)
            .to(enriched, Produced.with(KEYS, ENRICHED));

        orders.flatMapValues(order -> faults.contains(Fault.DOUBLE_COUNT) && order.orderId() == FAULTY_ORDER
                ? List.of(order, order) : List.of(order))
            .groupByKey(Grouped.with(KEYS, ORDERS))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("order-counts")
                .withKeySerde(KEYS).withValueSerde(Serdes.Long()))
            .toStream()
            .to(count, Produced.with(KEYS, Serdes.Long()));

        KGroupedStream<String, Order> byCustomer = orders.groupByKey(Grouped.with(KEYS, ORDERS));
        byCustomer.aggregate(() -> new Total(0), (customer, order, sum) -> new Total(sum.total() + order.amount()),
                Materialized.<String, Total, KeyValueStore<Bytes, byte[]>>as("order-totals")
                    .withKeySerde(KEYS).withValueSerde(TOTALS))
            .toStream()
            .to(total, Produced.with(KEYS, TOTALS));

        return builder.build();
    }
}
