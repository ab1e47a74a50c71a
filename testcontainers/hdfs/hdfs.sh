#!/bin/sh
# `hdfs namenode [options]` and `hdfs datanode`, run as hudi_connect_stack.hdfs.java_command runs the local
# daemons (its heap, JIT and Java 17 options).
set -eu
case "${1:-}" in
  namenode) class=org.apache.hadoop.hdfs.server.namenode.NameNode ;;
  datanode) class=org.apache.hadoop.hdfs.server.datanode.DataNode ;;
  *) echo "usage: hdfs namenode|datanode [options]" >&2; exit 2 ;;
esac
shift
exec java -Xmx256m -XX:TieredStopAtLevel=1 --add-opens=java.base/java.lang=ALL-UNNAMED \
  -Djava.net.preferIPv4Stack=true -Dhadoop.log.dir=/tmp/hadoop/logs -Dhadoop.home.dir="$HADOOP_HOME" \
  -Dlog4j.configuration="file:$HADOOP_CONF_DIR/log4j.properties" \
  -cp "$HADOOP_CONF_DIR:$HADOOP_HOME/webapps-root:$HADOOP_HOME/jars/*" "$class" "$@"
