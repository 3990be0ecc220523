#!/bin/sh
# kafka-configs.sh of the official image: Kafka's ConfigCommand (each release's logging provider reads its own
# configuration: 4.x Log4j 2, 3.x reload4j).
exec java -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties \
  -Dlog4j.configuration=file:/opt/kafka/config/log4j.properties -Dkafka.soak.log.level=WARN \
  -cp '/opt/kafka/libs/*' kafka.admin.ConfigCommand "$@"
