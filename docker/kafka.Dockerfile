# Apache Kafka from the project's jars (.cache/kafka/<version>/, fetched from Maven Central by `make setup`),
# run the way the official apache/kafka image runs: every KAFKA_* environment variable becomes a line of
# server.properties (KAFKA_NODE_ID -> node.id; "__" -> "_", "___" -> "-"), storage is formatted on first start
# (CLUSTER_ID), /opt/kafka/bin/kafka-configs.sh is Kafka's ConfigCommand. For backend=docker where no registry
# serves apache/kafka:
#   make kafka-image                      # kafka-soak-kafka:<version> on BASE_IMAGE (any KRaft release from 3.5 on)
# BASE_IMAGE: any image with a Java 17+ runtime on PATH (eclipse-temurin:17-jre by default).
ARG BASE_IMAGE=eclipse-temurin:17-jre
FROM ${BASE_IMAGE}
ARG KAFKA_VERSION=4.3.1
ENV CLUSTER_ID=5L6g3nShT-eMCtK--X86sw KAFKA_LOG_DIRS=/var/lib/kafka/data
COPY .cache/kafka/${KAFKA_VERSION}/ /opt/kafka/libs/
# Log4j 2 configures a 4.x broker, Log4j 1 (reload4j) a 3.x one: each release reads its own and ignores the other's.
COPY plugins/kafka_soak/backends/kafka/log4j2.properties plugins/kafka_soak/backends/kafka/log4j.properties /opt/kafka/config/
COPY docker/kafka/ /opt/kafka/bin/
EXPOSE 9092
ENTRYPOINT ["/opt/kafka/bin/run-broker.sh"]
