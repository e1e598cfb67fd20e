#!/usr/bin/env bash
# A throwaway single-node KRaft Apache Kafka broker on loopback.
#
#   scripts/kafka.sh start DIR   format and start a broker in DIR (must not
#                                exist or be empty), wait until it accepts
#                                clients; prints OUTBOX_KAFKA_BROKERS=host:port
#   scripts/kafka.sh stop DIR    stop it and delete DIR
#   scripts/kafka.sh kill DIR    SIGKILL the broker, keep its data (for faults)
#   scripts/kafka.sh restart DIR start a killed/stopped broker again on the
#                                same port and data
#   scripts/kafka.sh acl DIR ARGS...  kafka-acls (AclCommand)
#                                against the broker's PLAINTEXT listener,
#                                e.g. --add --allow-principal User:relay
#                                --operation Write --topic t
#   scripts/kafka.sh jmx DIR PORT OBJECT...  each OBJECT's JMX attributes,
#                                read once (JmxTool; for a broker started
#                                with a JMX port, as bench/lib.sh does)
#
# Optional, for tests that need more than the PLAINTEXT listener (the
# shared broker sets neither):
#   OUTBOX_KAFKA_LISTENERS  extra listeners, separated by spaces or commas,
#        each named after its security protocol (SSL, SASL_SSL, ...; the
#        properties below may map it otherwise): NAME alone gets a free
#        loopback port of its own ('start' also prints
#        OUTBOX_KAFKA_<NAME>_BROKERS=127.0.0.1:<port>), NAME://127.0.0.1:PORT
#        is taken as it is
#   OUTBOX_KAFKA_PROPERTIES=FILE  lines appended to server.properties (a
#        later key wins: an authorizer, SASL users, ssl.*, auto-create off)
#   OUTBOX_KAFKA_FORMAT_ARGS  extra arguments of `StorageTool format`, one
#        per line (e.g. --add-scram and its SCRAM-SHA-512=[...] value)
# They are remembered in DIR, so 'restart' brings the same broker back; the
# PLAINTEXT listener stays, and readiness is checked on it.
#   OUTBOX_KAFKA_VERSION  the broker's version: 4.4 (default) or 3.9 (see
#        kafka_version in lib.sh); 'start' prints OUTBOX_KAFKA_VERSION=<V>
#        and keeps it in DIR for the other commands
# The broker jars come from Maven Central through scripts/setup.sh (pinned in
# scripts/kafka/<version>/pom.xml) into $OUTBOX_CACHE/kafka/<version>/libs
# (OUTBOX_CACHE defaults to .cache in the checkout; a git worktree has none
# of its own, so point it at one that has the jars). Needs Java 17.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|stop|kill|restart|acl|jmx DIR"
HEAP="${OUTBOX_KAFKA_HEAP:-512m}"
# More JVM options for the broker, e.g. -XX:TieredStopAtLevel=1 (C1 only,
# as scripts/kafka_cluster.sh's nodes): it then starts on about half the
# CPU. Not the default yet (issue 35): relay_exactly_once_e2e_test's
# ATimedOutTransactionIsNotCalledFenced failed with and without it on a
# loaded machine, and the suite has not run whole with it.
JVM_OPTS="${OUTBOX_KAFKA_JVM_OPTS:-}"
# The version: the one DIR's broker was started with, else the environment's.
if [ "$cmd" != start ] && [ -f "$dir/version" ]; then
  VERSION=$(kafka_version "$(cat "$dir/version")") || exit 1
else
  VERSION=$(kafka_version) || exit 1
fi

# The broker's own jar must be there, or java would start and die on a
# ClassNotFoundException.
need_jars() { kafka_need_jars "$VERSION" || exit 1; }

launch() {
  need_jars
  # shellcheck disable=SC2086  # options, split on spaces
  kafka_launch "$VERSION" "$dir" "$HEAP" $JVM_OPTS
  # Generous: Kafka 4.4 on 2 loaded cores (load 40+, a suite and other
  # brokers beside it) took over 90 s to log that it started.
  kafka_wait_ready "$dir" 300 || { stop_broker; return 1; }
}

# extra_listeners: for each entry of OUTBOX_KAFKA_LISTENERS its port (a free
# one for a bare NAME), kept in DIR/port.<NAME>, and the three lines'
# additions: ",NAME://127.0.0.1:P" for listeners and advertised.listeners,
# ",NAME:NAME" for the map.
extra_listeners() {
  extra_l=""; extra_map=""
  local entry name p listeners=${OUTBOX_KAFKA_LISTENERS:-}
  for entry in ${listeners//,/ }; do
    name=${entry%%://*}
    if [ "$name" = "$entry" ]; then
      p=$(free_port)
    else
      p=${entry##*:}
    fi
    echo "$p" >"$dir/port.$name"
    extra_l="$extra_l,$name://127.0.0.1:$p"
    extra_map="$extra_map,$name:$name"
  done
}

write_config() {
  local port=$1 cport=$2
  extra_listeners
  {
    kafka_base_properties
    cat <<PROPS
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport$extra_l
advertised.listeners=PLAINTEXT://127.0.0.1:$port$extra_l
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT$extra_map
inter.broker.listener.name=PLAINTEXT
log.dirs=$dir/data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
PROPS
    # A SIGKILLed broker that comes back finds its old incarnation still
    # registered with the controller (itself) until that broker session
    # times out (9 s by default): 'restart' after 'kill' took 14 s against
    # 6 s for a first start, and 7.7 s with these. One node heartbeating to
    # itself on loopback: 4 heartbeats to a session.
    echo broker.session.timeout.ms=4000
    echo broker.heartbeat.interval.ms=1000
  } >"$dir/server.properties"
  if [ -n "${OUTBOX_KAFKA_PROPERTIES:-}" ]; then
    cat "$OUTBOX_KAFKA_PROPERTIES" >>"$dir/server.properties"
  fi
  kafka_node_files "$VERSION" "$dir"
}

start() {
  command -v java >/dev/null || die "java not found: run scripts/setup.sh"
  need_jars
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  [ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
  echo "$VERSION" >"$dir/version"
  local tries=0 port cport
  while :; do
    port=$(free_port); cport=$(free_port)
    [ "$port" != "$cport" ] || continue
    echo "$port" >"$dir/port"
    write_config "$port" "$cport"
    local format_args=()
    if [ -n "${OUTBOX_KAFKA_FORMAT_ARGS:-}" ]; then
      mapfile -t format_args <<<"$OUTBOX_KAFKA_FORMAT_ARGS"
    fi
    kafka_format "$VERSION" "$dir" "$(kafka_random_uuid "$VERSION" "$dir")" "${format_args[@]}"
    launch && break
    tries=$((tries + 1))
    [ $tries -lt 3 ] || die "kafka did not start: $(kafka_failure "$dir")"
  done
  echo "OUTBOX_KAFKA_DIR=$dir"
  echo "OUTBOX_KAFKA_VERSION=$VERSION"
  echo "OUTBOX_KAFKA_BROKERS=127.0.0.1:$port"
  local entry name listeners=${OUTBOX_KAFKA_LISTENERS:-}
  for entry in ${listeners//,/ }; do
    name=${entry%%://*}
    echo "OUTBOX_KAFKA_${name}_BROKERS=127.0.0.1:$(cat "$dir/port.$name")"
  done
  log "kafka ready: kcat -b 127.0.0.1:$port -L"
}

stop_broker() {
  stop_pid_file "$dir/pid"
  rm -f "$dir/pid"
}

case $cmd in
  start) start ;;
  stop) [ -d "$dir" ] || exit 0; stop_broker; rm -rf "$dir" ;;
  kill)
    [ -f "$dir/pid" ] || die "no broker in $dir"
    kafka_kill "$dir" ;;
  restart)
    stop_broker
    dir=$(cd "$dir" && pwd)
    launch || die "kafka did not restart: $(tail -3 "$dir/kafka.out")" ;;
  acl)
    shift 2
    need_jars
    kafka_java "$VERSION" "$dir/log.properties" \
      "$(kafka_tool_class "$VERSION" AclCommand)" \
      --bootstrap-server "127.0.0.1:$(cat "$dir/port")" "$@" ;;
  jmx)
    # jmx DIR PORT OBJECT...: each OBJECT's attributes, read once through
    # the JMX port the broker was started with (bench/lib.sh), by Kafka's
    # own JmxTool: "OBJECT:ATTRIBUTE=VALUE" lines.
    port=${3:?usage: $0 jmx DIR PORT OBJECT...}; shift 3
    need_jars
    args=(--jmx-url "service:jmx:rmi:///jndi/rmi://127.0.0.1:$port/jmxrmi"
          --one-time true --report-format properties)
    for o in "$@"; do args+=(--object-name "$o"); done
    kafka_java "$VERSION" "$dir/log.properties" \
      "$(kafka_tool_class "$VERSION" JmxTool)" "${args[@]}" ;;
  *) die "usage: $0 start|stop|kill|restart|acl|jmx DIR" ;;
esac
