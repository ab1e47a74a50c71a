#!/bin/sh
# initdb once with the superuser POSTGRES_USER (password auth from anywhere, as the postgres image does),
# create POSTGRES_DB, then run the command as the unprivileged postgres user (PostgreSQL refuses root).
set -eu
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
user=${POSTGRES_USER:-postgres}
database=${POSTGRES_DB:-$user}
mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  password_file=$(mktemp)
  printf '%s\n' "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}" > "$password_file"
  chown postgres "$password_file"
  as_postgres initdb -D "$PGDATA" -U "$user" --pwfile="$password_file" --auth=scram-sha-256 -E UTF8 --locale=C >/dev/null
  rm -f "$password_file"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  if [ "$database" != postgres ]; then
    echo "CREATE DATABASE \"$database\" OWNER \"$user\";" | as_postgres postgres --single -D "$PGDATA" postgres >/dev/null
  fi
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups "$@"
