#!/bin/bash
# As the apache/hadoop image does: each <FILE>.XML_<key>=<value> variable becomes a property of
# $HADOOP_CONF_DIR/<file>.xml (bash, not dash: dash drops variables whose names hold '-' or '.'); where
# ENSURE_NAMENODE_DIR is set and missing, the namenode is formatted; then the command runs.
set -euo pipefail
escape() { sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g'; }
for file in $(env | sed -n 's/^\([A-Za-z-]*\.XML\)_.*/\1/p' | sort -u); do
  {
    printf '<?xml version="1.0"?>\n<configuration>\n'
    env | grep -F "${file}_" | while IFS='=' read -r key value; do
      [ "${key#"${file}_"}" != "$key" ] || continue
      printf '  <property><name>%s</name><value>%s</value></property>\n' \
        "$(printf '%s' "${key#"${file}_"}" | escape)" "$(printf '%s' "$value" | escape)"
    done
    printf '</configuration>\n'
  } > "$HADOOP_CONF_DIR/$(printf '%s' "$file" | tr 'A-Z' 'a-z')"
done
if [ -n "${ENSURE_NAMENODE_DIR:-}" ] && [ ! -d "$ENSURE_NAMENODE_DIR" ]; then
  hdfs namenode -format -nonInteractive
fi
exec "$@"
