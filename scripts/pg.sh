#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback, ready for logical decoding:
# Debian's 15 with wal2json by default, or another major's server binaries
# from the npm registry (pgoutput only: they have no wal2json).
#
#   scripts/pg.sh start DIR   create and start a cluster in DIR (must not
#                             exist or be empty); prints shell assignments
#                             (PGHOST, PGPORT, PGUSER, PGDATABASE,
#                             OUTBOX_PG_CONNINFO) to stdout
#   scripts/pg.sh stop DIR    stop it (immediate) and delete DIR
#   scripts/pg.sh restart DIR [fast|immediate]   stop (default fast) and
#                             start again on the same port and data
#
# OUTBOX_PG_MAJOR (default 15) picks the major version for `start`; stop
# and restart use the cluster's own. The printed OUTBOX_PG_PLUGINS lists the
# output plugins the cluster has (wal2json only on 15).
# The port is chosen free; settings: wal_level=logical, 10 slots and senders,
# fsync on (durable defaults), and wal2json allowed in output_plugin_libraries
# on the minor releases that have that setting (15.19 and later; older ones
# allow every installed plugin and refuse to start if the setting is named).
# Trust authentication on 127.0.0.1 only: the cluster is for tests.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|stop DIR"

start() {
  local major=${OUTBOX_PG_MAJOR:-$PG_DEBIAN_MAJOR} plugins=pgoutput
  pg_select "$major" || die "no PostgreSQL $major server binaries"
  [ -x "$PG_BIN/initdb" ] || die "PostgreSQL $major not installed: run scripts/setup.sh"
  if [ "$major" = "$PG_DEBIAN_MAJOR" ]; then
    [ -f "$(dirname "$PG_BIN")/lib/wal2json.so" ] || die "wal2json not installed: run scripts/setup.sh"
    plugins="pgoutput wal2json"
  fi
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  [ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; fi
  chmod 700 "$dir"
  as_owner "$dir" "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust \
    --no-instructions -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
    die "initdb failed: $(tail -1 "$dir/initdb.log")"
  cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
wal_level = logical
max_replication_slots = 10
max_wal_senders = 10
fsync = on
synchronous_commit = on
max_connections = 100
shared_buffers = 128MB
log_min_messages = warning
CONF
  if pg_has_setting output_plugin_libraries; then
    echo "output_plugin_libraries = 'pgoutput, test_decoding, wal2json'" \
      >>"$dir/data/postgresql.conf"
  fi
  cat >"$dir/data/pg_hba.conf" <<HBA
local all all trust
host all all 127.0.0.1/32 trust
host replication all 127.0.0.1/32 trust
HBA
  local port tries=0
  while :; do
    port=$(free_port)
    if as_owner "$dir" "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" \
        -o "-p $port" -w -t 60 start >/dev/null 2>&1; then
      break
    fi
    tries=$((tries + 1))
    [ $tries -lt 5 ] || die "postgres did not start: $(tail -3 "$dir/postgres.log")"
  done
  echo "$port" >"$dir/port"
  echo "$major" >"$dir/major"
  cat <<ENV
PGHOST=127.0.0.1
PGPORT=$port
PGUSER=postgres
PGDATABASE=postgres
OUTBOX_PG_DIR=$dir
OUTBOX_PG_MAJOR=$major
OUTBOX_PG_PLUGINS='$plugins'
OUTBOX_PG_CONNINFO='host=127.0.0.1 port=$port user=postgres dbname=postgres'
ENV
  log "postgres $("$PG_BIN/postgres" --version | awk '{print $3}') ready: psql 'host=127.0.0.1 port=$port user=postgres dbname=postgres'"
}

# The binaries of the cluster in $dir (the major it was started with).
select_cluster() {
  pg_select "$(cat "$dir/major" 2>/dev/null || echo "$PG_DEBIAN_MAJOR")"
}

stop() {
  [ -d "$dir" ] || return 0
  select_cluster || true
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_owner "$dir" "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

restart() {
  dir=$(cd "$dir" && pwd)
  select_cluster || die "no server binaries for the cluster in $dir"
  local mode=${3:-fast}
  as_owner "$dir" "$PG_BIN/pg_ctl" -D "$dir/data" -m "$mode" -w stop >/dev/null 2>&1 || true
  as_owner "$dir" "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" \
    -o "-p $(cat "$dir/port")" -w -t 60 start >/dev/null 2>&1 ||
    die "postgres did not restart: $(tail -3 "$dir/postgres.log")"
}

case $cmd in
  start) start ;;
  stop) stop ;;
  restart) restart "$@" ;;
  *) die "usage: $0 start|stop DIR" ;;
esac
