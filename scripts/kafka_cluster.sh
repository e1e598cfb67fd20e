#!/usr/bin/env bash
# A throwaway N-node KRaft Apache Kafka cluster on loopback, for faults:
# each node is broker and controller, replication factor 3 (N when fewer)
# and min.insync.replicas 2 for every topic, __consumer_offsets and
# __transaction_state included. Nodes are numbered 1..N.
#
#   start DIR [N]        N=3; format and start the nodes in DIR (must not
#                        exist or be empty), wait until all serve and every
#                        partition has its full ISR; prints
#                        OUTBOX_KAFKA_CLUSTER_DIR=, _BROKERS=h:p,h:p,h:p and
#                        _VERSION= (the Kafka version) lines
#   stop DIR             SIGKILL every node (a SIGTERMed last node waits
#                        forever for a quorum), remove its iptables rules,
#                        delete DIR
#   kill DIR I           SIGKILL node I, keep its data
#   term DIR I           SIGTERM node I (a controlled shutdown), wait until
#                        it exited (OUTBOX_KAFKA_TERM_TIMEOUT s, default
#                        120: then SIGKILL and fail); fails when its log
#                        does not say it shut down cleanly
#   restart DIR I        start node I again (same ports, data) and wait until
#                        it serves; a node still running is only waited for
#   partition DIR I      iptables DROP of every packet to and from node I's
#                        client port on lo: clients cannot reach it, its
#                        connections hang rather than close; the nodes
#                        replicate and vote over listeners of their own, so
#                        the cluster itself stays whole
#   heal DIR [I]         remove that node's (or every node's) DROP rules
#   leader DIR TOPIC P   the node number leading partition P of TOPIC
#   coordinator DIR ID   the node number of transactional id ID's
#                        coordinator
#   controller DIR       the node number of the active controller
#   wait-isr DIR [S]     until every node is registered and every partition
#                        has a leader and its full ISR (S seconds, default
#                        180)
#   alive DIR            node numbers running, one per line
#
# Each node has three listeners on 127.0.0.1: PLAINTEXT (the client port,
# advertised: what clients and the relay use), BROKER (replication) and
# CONTROLLER (the quorum). DIR/nodeI holds its config, logs (server.log,
# kafka.out), pid and data. Heap per node: OUTBOX_KAFKA_CLUSTER_HEAP
# (default 384m); more JVM options: OUTBOX_KAFKA_CLUSTER_JVM_OPTS (default
# -XX:TieredStopAtLevel=1; set it empty for the JVM's defaults). The version is OUTBOX_KAFKA_VERSION's (3.9 or 4.4, jars
# and logging as scripts/kafka.sh's: lib.sh); DIR remembers it, so every
# later command runs the same one.
# `partition` and `heal` need root (iptables); each rule carries the comment
# outbox-kafka-cluster:<hash of DIR>:<I>, and only such rules are removed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

usage="usage: $0 start|stop|kill|term|restart|partition|heal|leader|coordinator|controller|wait-isr|alive DIR ..."
cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "$usage"
shift 2
HEAP="${OUTBOX_KAFKA_CLUSTER_HEAP:-384m}"
# C1 only: a node starts on about half the CPU (the machines the tests run
# on have 2 cores for 3 nodes), and a test cluster carries little.
JVM_OPTS="${OUTBOX_KAFKA_CLUSTER_JVM_OPTS--XX:TieredStopAtLevel=1}"
# The version: the one DIR's cluster was started with, else the
# environment's (OUTBOX_KAFKA_VERSION, kafka_version in lib.sh).
if [ "$cmd" != start ] && [ -f "$dir/version" ]; then
  VERSION=$(kafka_version "$(cat "$dir/version")") || exit 1
else
  VERSION=$(kafka_version) || exit 1
fi

node_dir() { echo "$dir/node$1"; }
nodes() { seq 1 "$(cat "$dir/nodes")"; }

# A node number of this cluster, or die.
check_node() {
  [[ "${1:-}" =~ ^[0-9]+$ ]] && [ -d "$(node_dir "$1")" ] ||
    die "no node '${1:-}' in cluster $dir"
}

# running I: node I's process is alive (and is that node: the pid file
# could name a reused pid).
running() {
  local node; node=$(node_dir "$1")
  [ -f "$node/pid" ] || return 1
  local pid; pid=$(cat "$node/pid")
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF "$node/server.properties"
}

# kill_node I: SIGKILL node I if it runs (never a reused pid), wait until
# it is gone.
kill_node() {
  if running "$1"; then kafka_kill "$(node_dir "$1")"; else rm -f "$(node_dir "$1")/pid"; fi
}

# bootstrap: client addresses of the nodes running and not partitioned.
bootstrap() {
  local i list=()
  for i in $(nodes); do
    if running "$i" && [ ! -f "$(node_dir "$i")/partitioned" ]; then
      list+=("127.0.0.1:$(cat "$(node_dir "$i")/port")")
    fi
  done
  [ ${#list[@]} -gt 0 ] || die "no node of $dir is running and reachable"
  local IFS=,; echo "${list[*]}"
}

# metadata [TOPIC]: kcat's metadata as JSON (all topics, or TOPIC).
metadata() {
  kcat -b "$(bootstrap)" -L -J -m 10 ${1:+-t "$1"} 2>/dev/null
}

# admin CMD ARGS...: scripts/kafka/ClusterAdmin.java (compiled by start).
admin() {
  kafka_need_jars "$VERSION" || exit 1
  java -cp "$(kafka_libs "$VERSION")/*:$dir/tools" \
    "$(kafka_log_opt "$VERSION" "$dir/tools/log.properties")" ClusterAdmin "$1" "$(bootstrap)" "${@:2}"
}

write_config() {  # I N VOTERS
  local i=$1 n=$2 voters=$3 node; node=$(node_dir "$1")
  local rf=$((n < 3 ? n : 3)) isr=$((n < 2 ? 1 : 2))
  {
    kafka_base_properties
    cat <<PROPS
node.id=$i
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$(cat "$node/port"),BROKER://127.0.0.1:$(cat "$node/bport"),CONTROLLER://127.0.0.1:$(cat "$node/cport")
advertised.listeners=PLAINTEXT://127.0.0.1:$(cat "$node/port"),BROKER://127.0.0.1:$(cat "$node/bport")
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=BROKER
log.dirs=$node/data
default.replication.factor=$rf
min.insync.replicas=$isr
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$isr
unclean.leader.election.enable=false
PROPS
  } >"$node/server.properties"
  kafka_node_files "$VERSION" "$node"
}

# ports N: three distinct free ports for each node (client, broker,
# controller) in nodeI/port, bport, cport; prints the quorum's voters.
ports() {
  local n=$1 i p used=" " voters=()
  for i in $(seq 1 "$n"); do
    for f in port bport cport; do
      p=$(free_port)
      while [[ "$used" == *" $p "* ]]; do p=$(free_port); done
      used="$used$p "
      echo "$p" >"$(node_dir "$i")/$f"
    done
    voters+=("$i@127.0.0.1:$(cat "$(node_dir "$i")/cport")")
  done
  local IFS=,; echo "${voters[*]}"
}

start() {
  local n=${1:-3}
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "N must be a number of nodes, not '$n'"
  command -v java >/dev/null || die "java not found: run scripts/setup.sh"
  kafka_need_jars "$VERSION" || exit 1
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  [ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
  echo "$n" >"$dir/nodes"
  # Later commands (restart) run the version the cluster started with,
  # whatever the environment says then.
  echo "$VERSION" >"$dir/version"
  # A start that fails leaves no node running (DIR stays, with the logs).
  trap 'for i in $(nodes); do kill_node "$i"; done' EXIT
  mkdir -p "$dir/tools"
  kafka_node_files "$VERSION" "$dir/tools"
  local i tries=0 voters id pids
  for i in $(seq 1 "$n"); do mkdir -p "$(node_dir "$i")"; done
  while :; do
    voters=$(ports "$n")
    for i in $(nodes); do write_config "$i" "$n" "$voters"; done
    id=$(kafka_random_uuid "$VERSION" "$dir/node1")
    pids=()
    for i in $(nodes); do
      kafka_format "$VERSION" "$(node_dir "$i")" "$id" & pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || die "kafka storage format failed in $dir"; done
    for i in $(nodes); do kafka_launch "$VERSION" "$(node_dir "$i")" "$HEAP" $JVM_OPTS; done
    # The admin tool compiles while the nodes start (javac through java:
    # a Java runtime without the javac command will do).
    [ -f "$dir/tools/ClusterAdmin.class" ] ||
      java -m jdk.compiler/com.sun.tools.javac.Main -nowarn -d "$dir/tools" \
        -cp "$(compgen -G "$(kafka_libs "$VERSION")/kafka-clients-*.jar" | head -1)" \
        "$OUTBOX_ROOT/scripts/kafka/ClusterAdmin.java" >"$dir/tools/javac.log" 2>&1 ||
      die "could not compile scripts/kafka/ClusterAdmin.java: $(head -1 "$dir/tools/javac.log")"
    local ok=1
    for i in $(nodes); do
      kafka_wait_ready "$(node_dir "$i")" 180 || { ok=0; break; }
    done
    [ $ok = 0 ] || break
    local why; why=$(kafka_failure "$(node_dir "$i")")
    for i in $(nodes); do kill_node "$i"; done
    tries=$((tries + 1))
    [ $tries -lt 3 ] || die "kafka cluster did not start (node $i): $why"
    log "kafka cluster did not start (node $i: $why); again on other ports"
  done
  admin warm >/dev/null || die "could not create the internal topics of $dir"
  wait_isr 180
  local brokers=()
  for i in $(nodes); do brokers+=("127.0.0.1:$(cat "$(node_dir "$i")/port")"); done
  {
    echo "OUTBOX_KAFKA_CLUSTER_DIR=$dir"
    echo "OUTBOX_KAFKA_CLUSTER_BROKERS=$(IFS=,; echo "${brokers[*]}")"
    echo "OUTBOX_KAFKA_CLUSTER_VERSION=$(kafka_release "$VERSION")"
  } | tee "$dir/env"
  trap - EXIT
  log "kafka cluster of $n ready: kcat -b $(IFS=,; echo "${brokers[*]}") -L"
}

# isr_gaps N: from kcat's metadata JSON on stdin, one line for each thing
# missing from a whole cluster of N nodes (a node not registered, a
# partition without a leader or with replicas out of its ISR).
isr_gaps() {
  python3 -c '
import json, sys
n = int(sys.argv[1])
md = json.load(sys.stdin)
ids = sorted(b["id"] for b in md.get("brokers", []))
if ids != list(range(1, n + 1)):
    print("registered nodes %s, want 1..%d" % (ids, n))
for t in md.get("topics", []):
    if t.get("error"):
        print("%s: %s" % (t["topic"], t["error"]))
    for p in t.get("partitions", []):
        replicas = sorted(r["id"] for r in p.get("replicas", []))
        isr = sorted(r["id"] for r in p.get("isrs", []))
        if p.get("leader", -1) < 0 or isr != replicas:
            print("%s-%d leader %s replicas %s isr %s" % (
                t["topic"], p["partition"], p.get("leader"), replicas, isr))
' "$1"
}

wait_isr() {
  local timeout=${1:-180} deadline gaps n; n=$(cat "$dir/nodes")
  deadline=$((SECONDS + timeout))
  while :; do
    gaps=$(metadata | isr_gaps "$n" 2>&1) && [ -z "$gaps" ] && return 0
    [ $SECONDS -lt $deadline ] || die "cluster $dir not whole after ${timeout}s: $(echo "$gaps" | head -3 | paste -sd';')"
    sleep 0.5
  done
}

leader() {
  local topic=${1:-} partition=${2:-}
  [ -n "$topic" ] && [[ "$partition" =~ ^[0-9]+$ ]] || die "usage: $0 leader DIR TOPIC PARTITION"
  local out
  out=$(metadata "$topic" | python3 -c '
import json, sys
topic, part = sys.argv[1], int(sys.argv[2])
for t in json.load(sys.stdin).get("topics", []):
    if t["topic"] != topic: continue
    if t.get("error"): sys.exit("%s: %s" % (topic, t["error"]))
    for p in t["partitions"]:
        if p["partition"] == part:
            if p["leader"] < 0: sys.exit("%s-%d has no leader" % (topic, part))
            print(p["leader"]); sys.exit(0)
sys.exit("no partition %s-%d" % (topic, part))
' "$topic" "$partition" 2>&1) || die "leader of $topic-$partition: $out"
  echo "$out"
}

# rule_tag I: the comment on node I's iptables rules.
rule_tag() { echo "outbox-kafka-cluster:$(echo -n "$dir" | sha1sum | cut -c1-12):$1"; }

# rules I: prints node I's two rule specs (chain first), one per line.
rules() {
  local port tag; port=$(cat "$(node_dir "$1")/port"); tag=$(rule_tag "$1")
  echo "INPUT -i lo -p tcp --dport $port -m comment --comment $tag -j DROP"
  echo "OUTPUT -o lo -p tcp --sport $port -m comment --comment $tag -j DROP"
}

partition() {
  check_node "${1:-}"
  command -v iptables >/dev/null || die "iptables not found: run scripts/setup.sh"
  local spec
  while read -r spec; do
    # shellcheck disable=SC2086 # a rule spec is words
    iptables -w -C $spec 2>/dev/null || iptables -w -A $spec ||
      die "iptables refused the rule for node $1 (root?)"
  done < <(rules "$1")
  touch "$(node_dir "$1")/partitioned"
}

heal() {
  local i list
  if [ -n "${1:-}" ]; then check_node "$1"; list=$1; else list=$(nodes); fi
  command -v iptables >/dev/null || return 0
  for i in $list; do
    local spec
    while read -r spec; do
      # shellcheck disable=SC2086
      while iptables -w -D $spec 2>/dev/null; do :; done
    done < <(rules "$i")
    rm -f "$(node_dir "$i")/partitioned"
  done
}

term_node() {
  check_node "${1:-}"
  local node pid deadline timeout=${OUTBOX_KAFKA_TERM_TIMEOUT:-120}
  node=$(node_dir "$1")
  running "$1" || die "node $1 of $dir is not running"
  pid=$(cat "$node/pid")
  kill -TERM "$pid"
  deadline=$((SECONDS + timeout))
  while kill -0 "$pid" 2>/dev/null; do
    if [ $SECONDS -ge $deadline ]; then
      kafka_kill "$node"
      die "node $1 did not exit within ${timeout}s of SIGTERM; SIGKILLed"
    fi
    sleep 0.2
  done
  rm -f "$node/pid"
  grep -q "BrokerServer id=$1\] shut down completed" "$node/server.log" ||
    die "node $1 exited on SIGTERM without a clean shutdown: $(kafka_failure "$node")"
}

restart_node() {
  check_node "${1:-}"
  local node; node=$(node_dir "$1")
  if running "$1"; then
    log "node $1 is running; waiting until it serves"
  else
    kafka_need_jars "$VERSION" || exit 1
    kafka_launch "$VERSION" "$node" "$HEAP" $JVM_OPTS
  fi
  kafka_wait_ready "$node" 180 ||
    die "node $1 did not restart: $(kafka_failure "$node")"
}

if [ "$cmd" != start ]; then
  [ -f "$dir/nodes" ] || { [ "$cmd" = stop ] && exit 0; die "no kafka cluster in $dir"; }
  dir=$(cd "$dir" && pwd)
fi
case $cmd in
  start) start "$@" ;;
  stop)
    heal
    for i in $(nodes); do kill_node "$i"; done
    rm -rf "$dir" ;;
  kill)
    check_node "${1:-}"
    running "$1" || die "node $1 of $dir is not running"
    kill_node "$1" ;;
  term) term_node "$@" ;;
  restart) restart_node "$@" ;;
  partition) partition "$@" ;;
  heal) heal "$@" ;;
  leader) leader "$@" ;;
  coordinator)
    [ -n "${1:-}" ] || die "usage: $0 coordinator DIR TRANSACTIONAL_ID"
    admin coordinator "$1" || die "no coordinator found for transactional id $1" ;;
  controller) admin controller || die "no active controller found" ;;
  wait-isr) wait_isr "${1:-180}" ;;
  alive) for i in $(nodes); do if running "$i"; then echo "$i"; fi; done ;;
  *) die "$usage" ;;
esac
