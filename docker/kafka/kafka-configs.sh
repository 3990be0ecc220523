#!/bin/sh
# kafka-configs.sh of the official image: Kafka's ConfigCommand.
exec java -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties -Dkafka.soak.log.level=WARN \
  -cp '/opt/kafka/libs/*' kafka.admin.ConfigCommand "$@"
