#!/bin/sh
# The broker of kafka.Dockerfile: KAFKA_* variables -> server.properties, format once, then kafka.Kafka.
set -eu
# each release's logging provider reads its own configuration (4.x: Log4j 2, 3.x: reload4j)
LOGGING="-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties -Dlog4j.configuration=file:/opt/kafka/config/log4j.properties -Dkafka.soak.log.level=INFO"
config=/opt/kafka/config/server.properties
env | grep '^KAFKA_' | grep -v -e '^KAFKA_HEAP_OPTS=' -e '^KAFKA_OPTS=' | while IFS='=' read -r name value; do
  key=$(printf '%s' "${name#KAFKA_}" | tr 'A-Z' 'a-z' | sed -e 's/___/-/g' -e 's/__/@/g' -e 's/_/./g' -e 's/@/_/g')
  printf '%s=%s\n' "$key" "$value"
done > "$config"
java $LOGGING -cp '/opt/kafka/libs/*' \
  kafka.tools.StorageTool format -t "$CLUSTER_ID" -c "$config" --ignore-formatted
exec java ${KAFKA_HEAP_OPTS:--Xmx512m} ${KAFKA_OPTS:-} -Dorg.apache.kafka.automatic.config.providers=none $LOGGING \
  -cp '/opt/kafka/libs/*' kafka.Kafka "$config"
