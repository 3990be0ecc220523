# The Kafka Streams reference app (apps/streams) built against one Kafka Streams version, for runtime=docker:
#   make streams-image STREAMS_VERSION=3.4.0     # kafka-soak-streams:3.4.0 on BASE_IMAGE
# APP_DIR: the build in the checkout's cache (.cache/apps/streams/<version>-<source hash>, what
# `python -m kafka_soak.cli streams-app VERSION` prints). The run gives the instance's options as the command
# and the data contract as SOAK_* variables; state lives in the container (/tmp/state), as in a pod without a
# volume. BASE_IMAGE: any image with a Java 17+ runtime on PATH.
ARG BASE_IMAGE=eclipse-temurin:17-jre
FROM ${BASE_IMAGE}
ARG APP_DIR
COPY ${APP_DIR}/soak-streams.jar /opt/soak-streams/soak-streams.jar
COPY ${APP_DIR}/lib/ /opt/soak-streams/lib/
ENTRYPOINT ["java", "-Xmx256m", "-XX:+UseG1GC", "-Dorg.apache.kafka.automatic.config.providers=none", "-cp", "/opt/soak-streams/soak-streams.jar:/opt/soak-streams/lib/*", "io.kafkasoak.streams.SoakStreamsApp"]
