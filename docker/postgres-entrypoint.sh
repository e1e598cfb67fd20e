#!/bin/sh
# First start: initdb with the settings scripts/pg.sh uses, then the outbox
# table and the least-privilege role (sql/outbox.sql, sql/roles.sql), and the
# passwords from the environment. Every start: exec postgres.
set -eu
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
: "${OUTBOX_RELAY_PASSWORD:?set OUTBOX_RELAY_PASSWORD}"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  initdb -D "$PGDATA" -U postgres --pwfile="$pwfile" -A scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  cat >>"$PGDATA/postgresql.conf" <<CONF
listen_addresses = '*'
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
# Cap the WAL a stopped relay's slot can pin (see sql/monitoring.sql).
max_slot_wal_keep_size = 10GB
CONF
  # Only minor releases from 15.19 on know this setting (older ones allow
  # every installed plugin, and refuse to start if the setting is named).
  if postgres --describe-config | cut -f1 | grep -x output_plugin_libraries >/dev/null; then
    echo "output_plugin_libraries = 'pgoutput, test_decoding, wal2json'" \
      >>"$PGDATA/postgresql.conf"
  fi
  cat >"$PGDATA/pg_hba.conf" <<HBA
local all all trust
host all all all scram-sha-256
host replication all all scram-sha-256
HBA
  # Set up over the local socket only, then restart listening.
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  psql -v ON_ERROR_STOP=1 -q -U postgres -d postgres \
    -f /docker-sql/outbox.sql -f /docker-sql/roles.sql
  # psql interpolates :'pw' in a script, not in -c: the command comes on
  # standard input.
  echo "ALTER ROLE outbox_relay PASSWORD :'pw'" |
    psql -v ON_ERROR_STOP=1 -q -U postgres -d postgres \
      -v pw="$OUTBOX_RELAY_PASSWORD"
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA"
