# Shared by container_test.sh and package_test.sh (source it): the suite's
# servers from $OUTBOX_TEST_ENV, podman with the project's settings, an
# outbox table of the test's own, and its events counted in Kafka.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/scripts/lib.sh"
env_file=${OUTBOX_TEST_ENV:?set by ctest}
get() { sed -n "s/^$1=//p" "$env_file"; }
export PGHOST PGPORT PGUSER PGDATABASE
PGHOST=$(get PGHOST) PGPORT=$(get PGPORT) PGUSER=$(get PGUSER)
PGDATABASE=$(get PGDATABASE)
BROKERS=$(get OUTBOX_KAFKA_BROKERS)
# The relay in a container reaches the suite's servers over the host's
# network (podman --network host), as a process on this machine would.
CONNINFO="host=127.0.0.1 port=$PGPORT user=$PGUSER dbname=$PGDATABASE"

pm() { "$root/scripts/container.sh" podman "$@"; }

fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
finish() {
  [ $fails = 0 ] || { echo "$fails problem(s)"; exit 1; }
  echo "${1:-ok}"
}

# make_table NAME: an outbox table (sql/outbox.sql's columns that matter).
make_table() {
  psql -q -v ON_ERROR_STOP=1 -c "CREATE TABLE $1 (id uuid PRIMARY KEY,
    aggregatetype text NOT NULL, aggregateid text NOT NULL, type text NOT NULL,
    payload jsonb)"
}

# write_events TABLE FROM TO: one transaction per event, ids FROM..TO.
write_events() {
  local n
  for ((n = $2; n <= $3; n++)); do
    echo "INSERT INTO $1 VALUES (gen_random_uuid(), 'order', '$n', 'OrderCreated', '{\"n\": $n}');"
  done | psql -q -v ON_ERROR_STOP=1
}

# write_last_event TABLE N: one event (aggregate id N) and prints a WAL
# position inside its transaction, before its commit record: a slot
# confirmed at or past it confirmed that commit, as the relay confirms only
# whole transactions, after their delivery.
write_last_event() {
  psql -Atq -v ON_ERROR_STOP=1 <<SQL
BEGIN;
INSERT INTO $1 VALUES (gen_random_uuid(), 'order', '$2', 'OrderCreated', '{}');
SELECT pg_current_wal_insert_lsn();
COMMIT;
SQL
}

# distinct_in_topic TOPIC: how many distinct aggregate ids the topic holds.
distinct_in_topic() {
  { kcat -b "$BROKERS" -C -t "$1" -e -q -f '%k\n' 2>/dev/null || true; } |
    sort -u | grep -c . || true
}

# wait_events TOPIC N: until the topic holds N distinct events (2 minutes).
wait_events() {
  local deadline=$((SECONDS + 120))
  until [ "$(distinct_in_topic "$1")" -ge "$2" ]; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.5
  done
}

# slot_confirmed SLOT: its confirmed_flush_lsn, empty when it does not exist.
slot_confirmed() {
  psql -Atc "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$1'"
}

# lsn_at_least A B: true when LSN A >= LSN B.
lsn_at_least() {
  [ "$(psql -Atc "SELECT '$1'::pg_lsn >= '$2'::pg_lsn")" = t ]
}

# wait_slot_active SLOT: until a relay streams from it (a minute).
slot_active() {
  [ "$(psql -Atc "SELECT active FROM pg_replication_slots WHERE slot_name = '$1'")" = t ]
}
wait_slot_active() { wait_for 60 slot_active "$1"; }

# The Debian releases the image and the package are built for, and the
# tag of the relay image of each: Debian 13 is the default image (the tag
# other tests use), Debian 12 by --build-arg DEBIAN_RELEASE=12.
# OUTBOX_TEST_IMAGE names another tag (a developer's own, on a shared
# machine).
image_tag() {
  local tag=${OUTBOX_TEST_IMAGE:-localhost/outbox-relay:test}
  case $1 in
    13) echo "$tag" ;;
    *) echo "$tag-debian$1" ;;
  esac
}

# build_image RELEASE TAG [PODMAN BUILD ARGS...]: docker/Dockerfile for that
# release, with the arguments every test passes (the same ones, so
# container_test's image and package_test's build stage share podman's
# layers: one compile per release). The default release passes no
# DEBIAN_RELEASE, as `scripts/container.sh build TAG docker/Dockerfile`
# does. Prints the build's tail on failure.
build_image() {
  local release=$1 tag=$2 args=() log; shift 2
  [ "$release" = 13 ] || args+=(--build-arg "DEBIAN_RELEASE=$release")
  args+=(--build-arg OUTBOX_GIT_REVISION="$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)")
  log=$(mktemp /tmp/outbox-build.XXXXXX)
  if ! "$root/scripts/container.sh" build "$tag" docker/Dockerfile "${args[@]}" "$@" >"$log" 2>&1; then
    tail -30 "$log"; rm -f "$log"; return 1
  fi
  rm -f "$log"
}

# check_built_with RELEASE FILE: the README's support matrix row of that
# Debian release names what FILE (the build's built-with.txt, written by
# CMakeLists.txt) says the build used: the compiler and the libraries, each
# a version prefix ("17" stands for 17.x).
check_built_with() {
  local release=$1 file=$2 row key doc built n=3
  row=$(grep "^| $release (" "$root/README.md" || true)
  [ -n "$row" ] || { fail "README.md has no support matrix row '| $release (...'"; return; }
  for key in compiler librdkafka libpq abseil simdjson; do
    doc=$(cut -d'|' -f$n <<<"$row" | xargs)
    built=$(sed -n "s/^$key=//p" "$file")
    case $key in compiler) built=${built/#GNU /GCC } ;; esac
    [ -n "$built" ] && { [ "$built" = "$doc" ] || [ "${built#"$doc".}" != "$built" ]; } ||
      fail "README support matrix, Debian $release: $key is '$doc', the build used '$built'"
    n=$((n + 1))
  done
}
