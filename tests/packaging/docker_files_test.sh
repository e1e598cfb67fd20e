#!/usr/bin/env bash
# Static consistency check of docker/ (there is no Docker engine here):
# every file the Dockerfiles and compose.yaml reference exists, the
# PostgreSQL and Kafka settings match scripts/pg.sh and scripts/kafka.sh
# (what the tests run), the runtime stage installs every library the built
# binary links, and docker/relay.yaml is a valid config.
#   tests/packaging/docker_files_test.sh BIN_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:?usage: $0 BIN_DIR}
cd "$root"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. COPY sources exist (build context: the repository root).
for df in docker/Dockerfile docker/postgres.Dockerfile; do
  [ -f "$df" ] || { fail "$df missing"; continue; }
  while read -r src; do
    [ -e "$src" ] || fail "$df copies $src, which does not exist"
  done < <(grep -E '^COPY ' "$df" | grep -v -- '--from=' |
           awk '{for (i = 2; i < NF; i++) print $i}')
done

# 2. compose.yaml: build files, mounted files, the SQL the entrypoint runs.
compose=docker/compose.yaml
while read -r df; do
  [ -f "$df" ] || fail "compose.yaml builds $df, which does not exist"
done < <(sed -n 's/^ *dockerfile: *//p' "$compose")
while read -r vol; do
  [ -e "docker/$vol" ] || fail "compose.yaml mounts docker/$vol, which does not exist"
done < <(sed -n 's/^ *- \.\/\([^:]*\):.*/\1/p' "$compose")
while read -r f; do
  [ -f "sql/$(basename "$f")" ] || fail "postgres-entrypoint.sh runs $f, not in sql/"
done < <(grep -o '/docker-sql/[a-z_]*\.sql' docker/postgres-entrypoint.sh | sort -u)
sh -n docker/postgres-entrypoint.sh || fail "postgres-entrypoint.sh: syntax"
[ -x docker/postgres-entrypoint.sh ] || fail "postgres-entrypoint.sh is not executable"

# 3. PostgreSQL settings as scripts/pg.sh sets them.
for key in wal_level max_replication_slots max_wal_senders; do
  want=$(grep -E "^$key = " scripts/pg.sh || true)
  [ -n "$want" ] || { fail "scripts/pg.sh has no $key"; continue; }
  grep -qxF "$want" docker/postgres-entrypoint.sh ||
    fail "postgres-entrypoint.sh lacks '$want' (as in scripts/pg.sh)"
done
# output_plugin_libraries: the same value, written only where the server
# knows the setting (15.18 refuses to start with it).
opl=$(grep -o "output_plugin_libraries = '[^']*'" scripts/pg.sh || true)
[ -n "$opl" ] || fail "scripts/pg.sh does not set output_plugin_libraries"
grep -qF "$opl" docker/postgres-entrypoint.sh ||
  fail "postgres-entrypoint.sh lacks \"$opl\" (as in scripts/pg.sh)"
for f in scripts/lib.sh docker/postgres-entrypoint.sh; do
  grep -q -- '--describe-config' "$f" ||
    fail "$f writes output_plugin_libraries without asking the server (--describe-config)"
done
grep -q 'postgresql-15-wal2json' docker/postgres.Dockerfile || fail "no wal2json in postgres image"

# 4. Kafka: the pinned release of the default version (kafka_version in
#    scripts/lib.sh) and the KRaft settings of kafka.sh (its own lines and
#    the ones every node shares, in lib.sh).
kver=$(OUTBOX_KAFKA_VERSION='' bash -c 'source scripts/lib.sh && kafka_release')
kpom=$(OUTBOX_KAFKA_VERSION='' bash -c 'source scripts/lib.sh && kafka_pom')
[ -n "$kver" ] || fail "no <kafka.version> in $kpom"
grep -q "image: apache/kafka:$kver\$" "$compose" ||
  fail "compose.yaml's apache/kafka tag is not $kver (${kpom#"$root"/})"
for prop in process.roles num.partitions offsets.topic.replication.factor \
            transaction.state.log.replication.factor transaction.state.log.min.isr \
            group.initial.rebalance.delay.ms auto.create.topics.enable; do
  val=$(sed -n "s/^$prop=//p" scripts/kafka.sh scripts/lib.sh)
  env=KAFKA_$(echo "$prop" | tr 'a-z.' 'A-Z_')
  got=$(sed -n "s/^ *$env: *//p" "$compose" | tr -d '"')
  [ "$got" = "$val" ] || fail "compose.yaml $env='$got', scripts/kafka.sh $prop=$val"
done

# 5. Build stage: only packages scripts/setup.sh installs, warnings as
#    errors. Runtime stage:
#    the Debian package the build stage makes, whose Depends dpkg-shlibdeps
#    derives from the libraries the binaries link (package_test checks them).
#    Both stages on the Debian release of the one ARG before the first FROM
#    (issue 33: 13 by default, 12 by --build-arg; container_test builds both).
[ "$(grep -m1 -E '^(ARG|FROM) ' docker/Dockerfile)" = "ARG DEBIAN_RELEASE=13" ] ||
  fail "Dockerfile does not open with ARG DEBIAN_RELEASE=13 before its first FROM"
stage() { sed -n "/^FROM debian:\${DEBIAN_RELEASE}$1 AS $2\$/,/^FROM /p" docker/Dockerfile; }
build_stage=$(stage '' build)
[ -n "$build_stage" ] || fail "Dockerfile has no 'FROM debian:\${DEBIAN_RELEASE} AS build'"
for p in $(grep -oE '\blib[a-z0-9.+-]+-dev\b|\bprometheus-cpp-dev\b' <<<"$build_stage" | sort -u); do
  grep -qw -- "$p" scripts/lib.sh scripts/setup.sh ||
    fail "Dockerfile build stage installs $p, scripts/setup.sh (lib.sh) does not"
done
grep -q -- '-DOUTBOX_WERROR="\$OUTBOX_WERROR"' <<<"$build_stage" &&
  grep -q '^ARG OUTBOX_WERROR=ON$' <<<"$build_stage" ||
  fail "Dockerfile build stage does not build with warnings as errors (OUTBOX_WERROR)"
runtime=$(stage -slim runtime)
[ -n "$runtime" ] || fail "Dockerfile has no 'FROM debian:\${DEBIAN_RELEASE}-slim AS runtime'"
grep -q 'apt-get install .*/tmp/outbox-relay.deb\|/tmp/outbox-relay.deb ca-certificates' <<<"$runtime" ||
  fail "runtime stage does not install the outbox-relay package"
grep -v '^#' <<<"$runtime" | grep -qE -- '\blib[a-z0-9.+-]+-dev\b' && fail "runtime stage names a -dev package"
relay="$bin/outbox-relay"
[ -x "$relay" ] || fail "$relay not built"
if [ -x "$relay" ]; then
  # 6. docker/relay.yaml is a valid config: status gets past config loading
  #    (exit 2 means a config error) and fails only on the connection.
  set +e
  out=$("$relay" status --config docker/relay.yaml \
        --set "postgres.conninfo=host=127.0.0.1 port=1 dbname=x" 2>&1)
  code=$?
  set -e
  [ $code = 1 ] || fail "docker/relay.yaml: outbox-relay status exited $code: $out"
fi

# 7. One HTTP port everywhere: relay.yaml, EXPOSE, HEALTHCHECK, compose.
port=$(sed -n 's/^ *listen: *"[^:]*:\([0-9]*\)".*/\1/p' docker/relay.yaml)
[ -n "$port" ] || fail "no http.listen port in docker/relay.yaml"
grep -q "^EXPOSE $port\$" docker/Dockerfile || fail "Dockerfile does not EXPOSE $port"
grep -q "^ENV OUTBOX_HTTP_PORT=$port\$" docker/Dockerfile || fail "OUTBOX_HTTP_PORT is not $port"
grep -qF '127.0.0.1:${OUTBOX_HTTP_PORT}/healthz' docker/Dockerfile || fail "HEALTHCHECK not on OUTBOX_HTTP_PORT"
grep -q "\"127.0.0.1:$port:$port\"" "$compose" || fail "compose.yaml does not publish $port"
grep -q "^USER [1-9]" docker/Dockerfile || fail "runtime stage is not non-root"

# 8. Prometheus and Grafana: the services exist and mount what they read.
# The block of one service in compose.yaml (to the next top-level key).
service() { sed -n "/^  $1:\$/,/^  [a-z-]*:\$/p" "$compose" | sed '$d'; }
for svc in prometheus grafana; do
  grep -q "^  $svc:\$" "$compose" || fail "compose.yaml has no $svc service"
done
prom=$(service prometheus)
graf=$(service grafana)
# The image runs the version the tests run (Debian's prometheus).
if command -v prometheus >/dev/null; then
  pver=$(prometheus --version 2>&1 | sed -n 's/^prometheus, version \([0-9.]*\).*/\1/p')
  grep -q "image: prom/prometheus:v$pver\$" <<<"$prom" ||
    fail "prometheus image is not v$pver (the version the tests run)"
fi
grep -q 'image: grafana/grafana:[0-9]' <<<"$graf" || fail "grafana image tag not pinned"
pyml=docker/prometheus/prometheus.yml
rules=docker/prometheus/outbox-relay.rules.yml
# Each rule file prometheus.yml loads is mounted at that path from docker/.
while read -r rf; do
  grep -qE -- "- \./prometheus/[^:]+:$rf(:ro)?\$" <<<"$prom" ||
    fail "prometheus.yml loads $rf, which the prometheus service does not mount"
done < <(sed -n '/^rule_files:/,/^[a-z]/s/^ *- *//p' "$pyml")
grep -qE -- "- \./prometheus/prometheus.yml:/etc/prometheus/prometheus.yml" <<<"$prom" ||
  fail "prometheus service does not mount prometheus.yml"
grep -q "relay:$port" "$pyml" || fail "prometheus.yml does not scrape relay:$port"
grep -q 'job_name: outbox-relay$' "$pyml" ||
  fail "prometheus.yml's job is not outbox-relay (OutboxRelayDown selects it)"
grep -q 'up{job="outbox-relay"}' "$rules" || fail "$rules: no up{job=\"outbox-relay\"}"
# Grafana: provisioning and dashboards mounted where the provider looks,
# the datasource is the prometheus service, the dashboard uses its uid.
gp=docker/grafana/provisioning
grep -qE -- "- \./grafana/provisioning:/etc/grafana/provisioning(:ro)?\$" <<<"$graf" ||
  fail "grafana service does not mount grafana/provisioning"
dpath=$(sed -n 's/^ *path: *//p' $gp/dashboards/*.yml)
grep -qE -- "- \./grafana/dashboards:$dpath(:ro)?\$" <<<"$graf" ||
  fail "grafana service does not mount grafana/dashboards at $dpath (the provider's path)"
ppport=$(grep -o '127.0.0.1:[0-9]*:9090' <<<"$prom" | head -1)
[ -n "$ppport" ] || fail "prometheus service does not publish 9090"
grep -q 'url: http://prometheus:9090$' $gp/datasources/*.yml ||
  fail "grafana datasource is not http://prometheus:9090"
uid=$(sed -n 's/^ *uid: *//p' $gp/datasources/*.yml)
for dash in docker/grafana/dashboards/*.json; do
  python3 - "$dash" "$uid" <<'PY' || fail "$dash: see above"
import json, sys
d = json.load(open(sys.argv[1]))
bad = [p["title"] for p in d["panels"]
       if p["datasource"]["uid"] != sys.argv[2] or not p["targets"]
       or any(t["datasource"]["uid"] != sys.argv[2] or not t["expr"]
              for t in p["targets"])]
if bad:
    print("panels without a query on datasource %s: %s" % (sys.argv[2], bad))
    sys.exit(1)
PY
done

if [ $fails -gt 0 ]; then echo "$fails problem(s)"; exit 1; fi
echo "docker files consistent"
