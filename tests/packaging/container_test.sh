#!/usr/bin/env bash
# CTest (label container): builds docker/Dockerfile for one Debian release
# (13, the default image, tagged localhost/outbox-relay:test; or 12, with
# --build-arg DEBIAN_RELEASE=12) and docker/postgres.Dockerfile with podman
# (scripts/container.sh: Debian base images from debootstrap, no registry)
# and runs them against the suite's PostgreSQL and Kafka with host
# networking:
#   - the image builds with compiler warnings as errors (the Dockerfile's
#     OUTBOX_WERROR), holds the three binaries, runs as a non-root user, is
#     the Debian release asked for, and has no compiler or -dev package;
#   - events reach Kafka, /readyz answers 200 from outside the container, the
#     HEALTHCHECK passes (podman healthcheck run);
#   - podman stop (SIGTERM) ends it with exit 0 and the slot confirmed past
#     the last event;
#   - the slot marker is on the volume: after the slot is dropped, a new
#     container on the same volume refuses to create it anew (exit 3) and
#     creates nothing;
#   - (the default release only) the postgres image starts, and the relay
#     image relays from it.
#   tests/packaging/container_test.sh [RELEASE]   (default 13)
source "$(dirname "$0")/container_lib.sh"
release=${1:-13}
tag=$(image_tag "$release")
pgtag=${OUTBOX_TEST_POSTGRES_IMAGE:-localhost/outbox-relay-postgres:test}
id=ctr_$$
slot=${id}_slot table=${id}_outbox topic=$id.events vol=$id-state
http_port=$(free_port)
cleanup() {
  local c
  for c in "$id" "$id-2" "$id-pg" "$id-relay2"; do
    pm rm -f -v -t 0 "$c" >/dev/null 2>&1 || true  # -v: and its anonymous volume
  done
  pm volume rm -f "$vol" >/dev/null 2>&1 || true
  pm volume rm -f "$id-pgdata" >/dev/null 2>&1 || true
  psql -q -c "DROP TABLE IF EXISTS $table" >/dev/null 2>&1 || true
  psql -Atc "SELECT pg_drop_replication_slot('$slot') FROM pg_replication_slots WHERE slot_name = '$slot'" \
    >/dev/null 2>&1 || true
}
trap cleanup EXIT

# 1. Build (the layers are cached; a fresh machine compiles the three
#    binaries once per release, without tests; package_test's build stage
#    is the same layers).
start=$SECONDS
revision=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
build_image "$release" "$tag" || exit 1
echo "Debian $release image built in $((SECONDS - start)) s," \
  "$(pm image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1 / 1e6}')"

# 2. What the image holds.
[ "$(pm image inspect -f '{{.Config.User}}' "$tag")" = 10001:10001 ] ||
  fail "image user is not 10001:10001"
# (stdout only: podman may warn on stderr)
inside() {
  pm run --rm --pull=never --health-interval disable --entrypoint sh "$tag" -c "$1"
}
[ "$(inside 'id -u')" = 10001 ] || fail "container does not run as uid 10001"
for b in outbox-relay outbox-poller outbox-audit; do
  got=$(inside "$b --version") || fail "$b --version failed: $got"
  [ "$got" = "$b $(sed -n 's/^project(outbox_relay VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt") (git $revision)" ] ||
    fail "$b --version printed '$got'"
done
got=$(inside '. /etc/os-release; echo "$VERSION_ID"')
[ "$got" = "$release" ] || fail "image is Debian '$got', want $release"
tools=$(inside 'for t in cc gcc g++ c++ clang ld as make cmake; do command -v $t; done; dpkg-query -W -f "\${Package}\n" | grep -- "-dev\$"' || true)
[ -z "$tools" ] || fail "runtime image has build tools or -dev packages: $tools"

# 3. A relay session: events before and while it runs.
make_table "$table"
pm volume create "$vol" >/dev/null
relay_args=(--pg "$CONNINFO" --kafka "$BROKERS" --slot "$slot"
            --tables "public.$table" --topic "$topic"
            --set "http.listen=0.0.0.0:$http_port")
# --health-interval disable: no systemd timer (this machine has no systemd);
# `podman healthcheck run` below runs the image's HEALTHCHECK itself.
pm run -d --pull=never --name "$id" --network host --health-interval disable -e OUTBOX_HTTP_PORT="$http_port" \
  -v "$vol:/var/lib/outbox-relay" "$tag" "${relay_args[@]}" >/dev/null
wait_slot_active "$slot" || fail "the relay did not start: $(pm logs "$id" 2>&1 | tail -5)"
write_events "$table" 1 100
wait_events "$topic" 100 || fail "100 events did not reach Kafka: $(pm logs "$id" 2>&1 | tail -5)"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$http_port/readyz" || true)
[ "$code" = 200 ] || fail "/readyz from outside answered $code"
pm healthcheck run "$id" >/dev/null || fail "HEALTHCHECK failed: $(pm inspect -f '{{json .State.Health}}' "$id")"
write_events "$table" 101 149
# The last event, and a WAL position inside its transaction.
last=$(write_last_event "$table" 150)
wait_events "$topic" 150 || fail "150 events did not reach Kafka"
pm stop -t 60 "$id" >/dev/null
code=$(pm inspect -f '{{.State.ExitCode}}' "$id")
[ "$code" = 0 ] || fail "podman stop: exit $code, want 0: $(pm logs "$id" 2>&1 | tail -5)"
confirmed=$(slot_confirmed "$slot")
if [ -z "$confirmed" ]; then
  fail "slot $slot missing after the relay stopped"
elif ! lsn_at_least "$confirmed" "$last"; then
  fail "slot confirmed to $confirmed, before the last event ($last)"
fi
[ "$(distinct_in_topic "$topic")" = 150 ] || fail "topic holds $(distinct_in_topic "$topic") events, want 150"
pm rm "$id" >/dev/null

# 4. The slot marker outlives the container: drop the slot; a new
#    container on the same volume refuses to create it anew.
marker=$(pm run --rm --pull=never --health-interval disable --entrypoint ls \
  -v "$vol:/var/lib/outbox-relay" "$tag" /var/lib/outbox-relay)
grep -qx "$slot.slot" <<<"$marker" || fail "no $slot.slot on the volume: $marker"
psql -Atc "SELECT pg_drop_replication_slot('$slot')" >/dev/null
set +e
out=$(pm run --pull=never --name "$id-2" --network host --health-interval disable \
      -e OUTBOX_HTTP_PORT="$http_port" -v "$vol:/var/lib/outbox-relay" "$tag" \
      "${relay_args[@]}" 2>&1)
set -e
code=$(pm inspect -f '{{.State.ExitCode}}' "$id-2")
[ "$code" = 3 ] || fail "dropped slot: exit $code, want 3: $(tail -3 <<<"$out")"
grep -q "$slot" <<<"$out" || fail "the refusal does not name $slot: $(tail -3 <<<"$out")"
[ -z "$(slot_confirmed "$slot")" ] || fail "the dropped slot was created anew"

# 5. docker/postgres.Dockerfile (compose's postgres service) and the relay
#    image relaying from it: once, with the default image.
if [ "$release" != 13 ]; then
  finish "Debian $release container image: built, relayed, stopped cleanly, kept its slot marker"
  exit 0
fi
start=$SECONDS
"$root/scripts/container.sh" build "$pgtag" docker/postgres.Dockerfile \
  >"/tmp/$id-pgbuild.log" 2>&1 ||
  { tail -30 "/tmp/$id-pgbuild.log"; rm -f "/tmp/$id-pgbuild.log"; exit 1; }
rm -f "/tmp/$id-pgbuild.log"
echo "postgres image built in $((SECONDS - start)) s"
pgport=$(free_port)
pm run -d --pull=never --name "$id-pg" --network host -e PGPORT="$pgport" \
  -e POSTGRES_PASSWORD=pg-test -e OUTBOX_RELAY_PASSWORD=relay-test \
  -v "$id-pgdata:/var/lib/postgresql/data" "$pgtag" >/dev/null
wait_for 60 pm exec "$id-pg" pg_isready -h 127.0.0.1 -p "$pgport" ||
  fail "postgres image not ready: $(pm logs "$id-pg" 2>&1 | tail -5)"
pgc=(pm exec "$id-pg" psql -p "$pgport" -U postgres -d postgres -Atc)
[ "$("${pgc[@]}" 'SHOW wal_level')" = logical ] || fail "postgres image: wal_level not logical"
pm run -d --pull=never --name "$id-relay2" --network host --health-interval disable -e OUTBOX_HTTP_PORT="$http_port" \
  -e PGPASSWORD=relay-test "$tag" \
  --pg "host=127.0.0.1 port=$pgport user=outbox_relay dbname=postgres" \
  --kafka "$BROKERS" --topic "$topic.pg" --set "http.listen=0.0.0.0:$http_port" >/dev/null
streaming() { [ "$("${pgc[@]}" 'SELECT count(*) FROM pg_replication_slots WHERE active')" = 1 ]; }
wait_for 60 streaming ||
  fail "relay image did not stream from the postgres image: $(pm logs "$id-relay2" 2>&1 | tail -5)"
for n in 1 2 3; do
  "${pgc[@]}" "INSERT INTO outbox (id, aggregatetype, aggregateid, type, payload)
               VALUES (gen_random_uuid(), 'order', '$n', 'OrderCreated', '{}')" >/dev/null
done
wait_events "$topic.pg" 3 ||
  fail "relay image from postgres image: events missing: $(pm logs "$id-relay2" 2>&1 | tail -5)"
pm stop -t 60 "$id-relay2" >/dev/null
code=$(pm inspect -f '{{.State.ExitCode}}' "$id-relay2")
[ "$code" = 0 ] || fail "relay from the postgres image: exit $code"
finish "Debian $release container image: built, relayed, stopped cleanly, kept its slot marker"
