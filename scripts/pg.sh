#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback, ready for logical decoding:
# Debian's 15 with wal2json by default, or another major's server binaries
# from the npm registry (pgoutput only: they have no wal2json).
#
#   scripts/pg.sh start DIR   create and start a cluster in DIR (must not
#                             exist or be empty); prints shell assignments
#                             (PGHOST, PGPORT, PGUSER, PGDATABASE,
#                             OUTBOX_PG_CONNINFO) to stdout
#   scripts/pg.sh stop DIR    stop it (immediate) and delete DIR (also after a
#                             SIGKILLed postmaster: its shared memory goes too)
#   scripts/pg.sh restart DIR [fast|immediate]   stop (default fast) and
#                             start again on the same port and data
#   scripts/pg.sh standby PRIMARY_DIR STANDBY_DIR   a physical streaming
#                             standby of the cluster in PRIMARY_DIR (see
#                             below); prints the same assignments as `start`
#                             for the standby, plus OUTBOX_PG_STANDBY_SLOT and
#                             OUTBOX_PG_PAIR_CONNINFO (both nodes, read-write)
#   scripts/pg.sh promote DIR promote the standby in DIR to a primary
#
# OUTBOX_PG_MAJOR (default 15) picks the major version for `start`; stop
# and restart use the cluster's own. The printed OUTBOX_PG_PLUGINS lists the
# output plugins the cluster has (wal2json only on 15).
# The port is chosen free; settings: wal_level=logical, 10 slots and senders,
# fsync on (durable defaults), and wal2json allowed in output_plugin_libraries
# on the minor releases that have that setting (15.19 and later; older ones
# allow every installed plugin and refuse to start if the setting is named).
# Trust authentication on 127.0.0.1 only: the cluster is for tests.
#
# `standby` works without pg_basebackup (the npm builds have none, and
# Debian's 15 cannot back up a newer server): it creates a physical slot for
# the standby on the primary, stops the primary cleanly (fast), copies its
# data directory without pg_replslot (as a base backup would), starts the
# primary again on its port and the standby on a free one, and waits until
# the standby streams through its slot (the standby's settings go to its
# postgresql.auto.conf, as pg_basebackup -R does). On PostgreSQL 17 and later
# it sets up slot synchronization: the primary's synchronized_standby_slots
# (ALTER SYSTEM) names the
# standby's slot (logical walsenders of failover slots send nothing the
# standby has not flushed), and the standby gets primary_conninfo with a
# dbname, primary_slot_name, hot_standby_feedback and sync_replication_slots.
# The standby's own synchronized_standby_slots is empty: once promoted it must
# not wait for a slot it does not have. `promote` waits until the node is
# read-write, then drops from its synchronized_standby_slots any name that is
# not a physical slot there (PostgreSQL would make logical walsenders wait
# for such a slot forever, with only a WARNING in the log).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

cmd=${1:-}; dir=${2:-}
usage="usage: $0 start|stop|restart|promote DIR | standby PRIMARY_DIR STANDBY_DIR"
[ -n "$cmd" ] && [ -n "$dir" ] || die "$usage"

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
  start_on_free_port "$dir" "$major"
  print_env "$dir" "$plugins"
}

# start_on_free_port DIR MAJOR: starts the cluster in DIR/data on a free
# port (retrying if another process takes the port first) and records the
# port and major in DIR.
start_on_free_port() {
  local dir=$1 major=$2 port tries=0
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
}

# print_env DIR PLUGINS: the shell assignments for the cluster in DIR.
print_env() {
  local dir=$1 plugins=$2 port major
  port=$(cat "$dir/port"); major=$(cat "$dir/major")
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

# sql DIR QUERY: runs QUERY on the cluster in DIR (through its socket) and
# prints the result unaligned, without headers. Debian's psql talks to every
# major the scripts start.
sql() {
  "$PG_DEBIAN_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$1" -p "$(cat "$1/port")" \
    -U postgres -d postgres -c "$2"
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
  # A postmaster that was killed (SIGKILL) leaves its pid file and its
  # System V shared memory segment (key and id on the file's 7th line);
  # remove the segment once nothing is attached to it.
  if [ -f "$dir/data/postmaster.pid" ]; then
    local key id
    read -r key id < <(sed -n 7p "$dir/data/postmaster.pid") || true
    if [ -n "${id:-}" ] && ipcs -m 2>/dev/null | awk -v k="$(printf '0x%08x' "$key" 2>/dev/null)" -v i="$id" \
        '$1 == k && $2 == i && $6 == 0 { found = 1 } END { exit !found }'; then
      ipcrm -m "$id" 2>/dev/null || true
    fi
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

# slot_active DIR SLOT: true when SLOT on the cluster in DIR has a walsender.
slot_active() {
  [ "$(sql "$1" "SELECT active FROM pg_replication_slots WHERE slot_name = '$2'")" = t ]
}

standby() {
  local primary standby_dir=${3:-} major slot list plugins=pgoutput
  [ -n "$standby_dir" ] || die "$usage"
  primary=$(cd "$dir" && pwd)
  select_cluster || die "no server binaries for the cluster in $primary"
  major=$(cat "$primary/major")
  [ "$major" -ge 12 ] || die "standby needs PostgreSQL 12 or later"
  [ "$major" = "$PG_DEBIAN_MAJOR" ] && plugins="pgoutput wal2json"
  mkdir -p "$standby_dir"
  standby_dir=$(cd "$standby_dir" && pwd)
  [ -z "$(ls -A "$standby_dir")" ] || die "$standby_dir is not empty"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$standby_dir"; fi
  chmod 700 "$standby_dir"
  # The slot keeps the WAL from the copy's checkpoint on for the standby.
  slot=$(basename "$standby_dir" | tr -c 'a-zA-Z0-9_\n' _ | tr 'A-Z' 'a-z')
  slot="standby_${slot:0:50}"
  sql "$primary" "SELECT pg_create_physical_replication_slot('$slot', true)" >/dev/null ||
    die "could not create the physical slot $slot on the primary"
  local sync=
  if pg_has_setting sync_replication_slots; then sync=1; fi
  if [ -n "$sync" ]; then
    list=$(sql "$primary" "SHOW synchronized_standby_slots")
    sql "$primary" "ALTER SYSTEM SET synchronized_standby_slots = '${list:+$list,}$slot'" >/dev/null
  fi
  as_owner "$primary" "$PG_BIN/pg_ctl" -D "$primary/data" -m fast -w stop >/dev/null 2>&1 ||
    die "could not stop the primary in $primary"
  cp -a "$primary/data" "$standby_dir/data"
  as_owner "$primary" "$PG_BIN/pg_ctl" -D "$primary/data" -l "$primary/postgres.log" \
    -o "-p $(cat "$primary/port")" -w -t 60 start >/dev/null 2>&1 ||
    die "the primary did not start again: $(tail -3 "$primary/postgres.log")"
  # What a base backup leaves out: the primary's slots (a copied logical slot
  # would block slot synchronization; a copied physical one would hold WAL),
  # its pid file and its runtime state.
  rm -rf "$standby_dir/data/pg_replslot/"* "$standby_dir/data/postmaster.pid" \
    "$standby_dir/data/postmaster.opts" "$standby_dir/data/pg_stat_tmp/"*
  touch "$standby_dir/data/standby.signal"
  # postgresql.auto.conf, as pg_basebackup -R writes it: it overrides what
  # the primary set there with ALTER SYSTEM, and ALTER SYSTEM keeps it.
  cat >>"$standby_dir/data/postgresql.auto.conf" <<CONF
unix_socket_directories = '$standby_dir'
primary_conninfo = 'host=127.0.0.1 port=$(cat "$primary/port") user=postgres dbname=postgres application_name=$slot'
primary_slot_name = '$slot'
hot_standby = on
hot_standby_feedback = on
CONF
  if [ -n "$sync" ]; then
    cat >>"$standby_dir/data/postgresql.auto.conf" <<CONF
sync_replication_slots = on
synchronized_standby_slots = ''
CONF
  fi
  if [ "$(id -u)" = 0 ]; then chown -R postgres: "$standby_dir"; fi
  start_on_free_port "$standby_dir" "$major"
  wait_for 60 slot_active "$primary" "$slot" ||
    die "the standby does not stream: $(tail -3 "$standby_dir/postgres.log")"
  print_env "$standby_dir" "$plugins"
  cat <<ENV
OUTBOX_PG_STANDBY_SLOT=$slot
OUTBOX_PG_PAIR_CONNINFO='host=127.0.0.1,127.0.0.1 port=$(cat "$primary/port"),$(cat "$standby_dir/port") user=postgres dbname=postgres target_session_attrs=read-write'
ENV
}

promote() {
  dir=$(cd "$dir" && pwd)
  select_cluster || die "no server binaries for the cluster in $dir"
  as_owner "$dir" "$PG_BIN/pg_ctl" -D "$dir/data" -w -t 60 promote >/dev/null 2>&1 ||
    die "promotion failed: $(tail -3 "$dir/postgres.log")"
  pg_has_setting synchronized_standby_slots || return 0
  local kept
  kept=$(sql "$dir" "SELECT coalesce(string_agg(quote_ident(name), ','), '')
    FROM unnest(string_to_array(current_setting('synchronized_standby_slots'), ',')) AS name
    WHERE EXISTS (SELECT 1 FROM pg_replication_slots
                  WHERE slot_name = trim(name) AND slot_type = 'physical')")
  if [ "$kept" != "$(sql "$dir" "SHOW synchronized_standby_slots")" ]; then
    sql "$dir" "ALTER SYSTEM SET synchronized_standby_slots = '$kept'" >/dev/null
    sql "$dir" "SELECT pg_reload_conf()" >/dev/null
    log "synchronized_standby_slots of the promoted node set to '$kept'"
  fi
}

case $cmd in
  start) start ;;
  stop) stop ;;
  restart) restart "$@" ;;
  standby) standby "$@" ;;
  promote) promote ;;
  *) die "$usage" ;;
esac
