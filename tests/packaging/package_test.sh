#!/usr/bin/env bash
# CTest (label package): the Debian package of one Debian release installed
# with dpkg -i into a clean root of that release (the base image of
# scripts/container.sh), its dependencies from Debian's archive; then
# --version of the three tools, and a relay session from the installed
# package against the suite's PostgreSQL and Kafka, stopped with SIGTERM
# (exit 0). The README's support matrix row of the release names what the
# build used (its built-with.txt).
#   tests/packaging/package_test.sh BUILD_DIR [12]
#       the package cpack makes from BUILD_DIR (this machine's Debian 12)
#   tests/packaging/package_test.sh --image 13
#       the package docker/Dockerfile's build stage made on Debian 13 (the
#       layers container_test builds: one compile for both)
source "$(dirname "$0")/container_lib.sh"
usage="usage: $0 BUILD_DIR [12] | --image RELEASE"
build=${1:?$usage}
release=${2:-12}
id=pkg_$$
slot=${id}_slot table=${id}_outbox topic=$id.events
pkgdir=$(mktemp -d /tmp/$id.XXXXXX)
cleanup() {
  pm rm -f -t 0 "$id" >/dev/null 2>&1 || true
  psql -q -c "DROP TABLE IF EXISTS $table" >/dev/null 2>&1 || true
  psql -Atc "SELECT pg_drop_replication_slot('$slot') FROM pg_replication_slots WHERE slot_name = '$slot'" \
    >/dev/null 2>&1 || true
  rm -rf "$pkgdir"
}
trap cleanup EXIT

# 1. The package, and what it depends on.
start=$SECONDS
if [ "$build" = --image ]; then
  [ -n "${2:-}" ] || { echo "$usage"; exit 2; }
  stage=$(image_tag "$release")-build
  build_image "$release" "$stage" --target build || exit 1
  pm run --rm --pull=never -v "$pkgdir:/out" "$stage" \
    sh -c 'cp /pkg/outbox-relay.deb /out/outbox-relay_debian$0.deb && cp /build/built-with.txt /out/' "$release"
else
  (cd "$pkgdir" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$pkgdir" >/dev/null)
  cp "$build/built-with.txt" "$pkgdir/"
fi
deb=$(ls "$pkgdir"/outbox-relay_*.deb)
echo "Debian $release package: $(basename "$deb"), $(stat -c %s "$deb") bytes, made in $((SECONDS - start)) s"
echo "built with: $(tr '\n' ' ' <"$pkgdir/built-with.txt")"
check_built_with "$release" "$pkgdir/built-with.txt"
depends=$(dpkg-deb -f "$deb" Depends)
for p in libpq5 librdkafka1; do
  grep -qw "$p" <<<"$depends" || fail "Depends lacks $p: $depends"
done
grep -q -- '-dev' <<<"$depends" && fail "Depends names a -dev package: $depends"
contents=$(dpkg-deb -c "$deb")
for f in usr/bin/outbox-relay usr/bin/outbox-poller usr/bin/outbox-audit \
         usr/share/outbox-relay/sql/outbox.sql \
         usr/share/outbox-relay/examples/relay.example.yaml \
         usr/share/doc/outbox-relay/copyright; do
  grep -q " \./$f\$" <<<"$contents" || fail "package lacks /$f"
done

# 2. Installed into a clean root; the container's command is the relay.
"$root/scripts/container.sh" base "$release"
make_table "$table"
install='apt-get update -qq >/dev/null &&
  { dpkg -i /pkg/outbox-relay_*.deb >/dev/null 2>&1 ||
    DEBIAN_FRONTEND=noninteractive apt-get install -f -y -qq --no-install-recommends >/dev/null; } &&
  dpkg-query -W -f "\${Status}\n" outbox-relay | grep -q "install ok installed" &&
  for b in outbox-relay outbox-poller outbox-audit; do $b --version; done &&
  exec outbox-relay "$@"'
pm run -d --pull=never --name "$id" --network host -v "$pkgdir:/pkg:ro" \
  "docker.io/library/debian:$release" sh -c "$install" sh \
  --pg "$CONNINFO" --kafka "$BROKERS" --slot "$slot" --tables "public.$table" \
  --topic "$topic" --set http.listen= --set postgres.state_dir=/tmp/state >/dev/null
wait_slot_active "$slot" || fail "the installed relay did not start: $(pm logs "$id" 2>&1 | tail -5)"
write_events "$table" 1 20
wait_events "$topic" 20 || fail "20 events did not reach Kafka: $(pm logs "$id" 2>&1 | tail -5)"
version=$(sed -n 's/^project(outbox_relay VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
logs=$(pm logs "$id" 2>&1)
for b in outbox-relay outbox-poller outbox-audit; do
  grep -q "^$b $version (git " <<<"$logs" || fail "no '$b $version (git ...)' from the installed $b"
done
pm stop -t 60 "$id" >/dev/null
code=$(pm inspect -f '{{.State.ExitCode}}' "$id")
[ "$code" = 0 ] || fail "installed relay: exit $code after SIGTERM: $(pm logs "$id" 2>&1 | tail -5)"
finish "Debian $release package: installed with dpkg -i in a clean Debian $release root, relayed, stopped cleanly"
