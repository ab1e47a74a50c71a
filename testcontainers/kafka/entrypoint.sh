#!/bin/sh
# server.properties from KAFKA_<PROPERTY> variables, as the apache/kafka image reads them:
# '_' -> '.', '__' -> '_', '___' -> '-', lower case. Then format the log directory once and run.
set -eu
properties=/opt/kafka/server.properties
: > "$properties"
env | grep '^KAFKA_' | while IFS='=' read -r key value; do
  name=$(printf '%s' "${key#KAFKA_}" | tr 'A-Z' 'a-z' | sed -e 's/___/-/g' -e 's/__/@/g' -e 's/_/./g' -e 's/@/_/g')
  printf '%s=%s\n' "$name" "$value" >> "$properties"
done
classpath='/opt/kafka/libs/*'
log_dir=$(sed -n 's/^log\.dirs=//p' "$properties")
if [ ! -f "${log_dir:-/tmp/kraft-combined-logs}/meta.properties" ]; then
  java -Xmx256m -Dlog4j.configuration=file:/opt/kafka/log4j.properties -cp "$classpath" \
    kafka.tools.StorageTool format "--cluster-id=$CLUSTER_ID" -c "$properties"
fi
exec java -Xmx512m -Dlog4j.configuration=file:/opt/kafka/log4j.properties -cp "$classpath" kafka.Kafka "$properties"
