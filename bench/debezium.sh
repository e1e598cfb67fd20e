#!/usr/bin/env bash
# Debezium's PostgreSQL connector with its Outbox Event Router, in Kafka
# Connect standalone, with no Docker: the industry anchor of the benchmarks.
#
#   bench/debezium.sh fetch        copy the jars of Kafka Connect (pinned in
#                                  bench/debezium/pom.xml) and of Debezium
#                                  $DEBEZIUM_VERSION from Maven Central into
#                                  .cache/debezium/$DEBEZIUM_VERSION/libs
#   bench/debezium.sh start DIR    write worker.properties and
#                                  connector.properties in DIR (must not exist
#                                  or be empty) and start ConnectStandalone;
#                                  waits until the connector's task runs and
#                                  its slot is active, unless DEBEZIUM_WAIT=0.
#                                  The JVM's pid is in DIR/pid, its log in
#                                  DIR/connect.log.
#   bench/debezium.sh stop DIR     stop it and delete DIR
#   bench/debezium.sh version      print the Debezium version it runs
#
# Environment: PGHOST, PGPORT, PGUSER, PGDATABASE (as scripts/pg.sh prints
# them) and OUTBOX_KAFKA_BROKERS (scripts/kafka.sh). Optional:
#   DEBEZIUM_VERSION      the connector's version (default the pom's,
#                         3.2.3.Final; bench/debezium_compare.sh also runs
#                         3.7.0.Final, which Connect 3.9.1 runs as it is)
#   DEBEZIUM_SLOT         replication slot (default debezium); created with
#                         pgoutput by the connector when missing
#   DEBEZIUM_PUBLICATION  publication (default dbz_publication); created
#                         FOR TABLE public.outbox when missing (filtered)
#   DEBEZIUM_TABLE        outbox table (default public.outbox)
#   DEBEZIUM_TOPIC        topic template (default outbox.event.${routedByValue},
#                         the same topics as outbox-relay)
#   DEBEZIUM_HEAP         JVM heap options (default -Xms256m -Xmx2g, as
#                         Kafka's connect-standalone.sh)
#   DEBEZIUM_PRODUCER     extra worker lines, e.g. 'producer.linger.ms=20'
#   DEBEZIUM_CONNECTOR    extra connector lines, e.g.
#                         'transforms.outbox.table.field.event.timestamp=ts'
#
# Records: topic outbox.event.<aggregatetype>, key aggregateid (string),
# value the payload column's JSON text (StringConverter), header id, exactly
# like outbox-relay's. The worker commits offsets, and so confirms the slot's
# LSN, every second (offset.flush.interval.ms=1000) after the producer has
# flushed. Needs Java 17.
set -euo pipefail
source "$(dirname "$0")/../scripts/lib.sh"

cmd=${1:-}; dir=${2:-}
POM="$OUTBOX_ROOT/bench/debezium/pom.xml"
DEBEZIUM_VERSION=${DEBEZIUM_VERSION:-$(sed -n 's:.*<debezium.version>\(.*\)</debezium.version>.*:\1:p' "$POM")}
[[ $DEBEZIUM_VERSION =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[A-Za-z0-9]+$ ]] ||
  die "DEBEZIUM_VERSION \"$DEBEZIUM_VERSION\" is not a Debezium release (3.7.0.Final)"
LIBS="$OUTBOX_CACHE/debezium/$DEBEZIUM_VERSION/libs"

fetch() {
  local stamp="$OUTBOX_CACHE/debezium/$DEBEZIUM_VERSION/pom.sha256"
  if [ -f "$stamp" ] && sha256sum --quiet -c "$stamp" >/dev/null 2>&1 && [ -d "$LIBS" ]; then
    return 0
  fi
  command -v mvn >/dev/null || die "maven not found: run scripts/setup.sh"
  log "fetching Kafka Connect and Debezium $DEBEZIUM_VERSION from Maven Central"
  rm -rf "$LIBS"; mkdir -p "$LIBS"
  (cd "$(dirname "$POM")" && mvn -q -B dependency:copy-dependencies \
     -Ddebezium.version="$DEBEZIUM_VERSION" \
     -DincludeScope=runtime -DoutputDirectory="$LIBS") ||
    die "could not fetch Debezium $DEBEZIUM_VERSION with maven"
  sha256sum "$POM" >"$stamp"
}

start() {
  : "${PGHOST:?}" "${PGPORT:?}" "${OUTBOX_KAFKA_BROKERS:?}"
  command -v java >/dev/null || die "java not found: run scripts/setup.sh"
  fetch
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  [ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
  local rest_port; rest_port=$(free_port)
  echo "$rest_port" >"$dir/rest_port"
  cat >"$dir/worker.properties" <<PROPS
bootstrap.servers=$OUTBOX_KAFKA_BROKERS
key.converter=org.apache.kafka.connect.storage.StringConverter
value.converter=org.apache.kafka.connect.storage.StringConverter
offset.storage.file.filename=$dir/offsets.dat
offset.flush.interval.ms=1000
listeners=http://127.0.0.1:$rest_port
${DEBEZIUM_PRODUCER:-}
PROPS
  cat >"$dir/connector.properties" <<PROPS
name=outbox
connector.class=io.debezium.connector.postgresql.PostgresConnector
tasks.max=1
database.hostname=$PGHOST
database.port=$PGPORT
database.user=${PGUSER:-postgres}
database.password=${PGPASSWORD:-}
database.dbname=${PGDATABASE:-postgres}
topic.prefix=dbz
plugin.name=pgoutput
slot.name=${DEBEZIUM_SLOT:-debezium}
publication.name=${DEBEZIUM_PUBLICATION:-dbz_publication}
publication.autocreate.mode=filtered
table.include.list=${DEBEZIUM_TABLE:-public.outbox}
snapshot.mode=no_data
tombstones.on.delete=false
transforms=outbox
transforms.outbox.type=io.debezium.transforms.outbox.EventRouter
transforms.outbox.route.by.field=aggregatetype
transforms.outbox.route.topic.replacement=${DEBEZIUM_TOPIC:-outbox.event.\${routedByValue\}}
transforms.outbox.table.field.event.key=aggregateid
transforms.outbox.table.field.event.payload=payload
${DEBEZIUM_CONNECTOR:-}
PROPS
  log4j_to_file "$dir/connect.log" org.reflections=ERROR >"$dir/log4j.properties"
  # setsid: its own process group, so 'stop' ends the JVM and nothing else.
  # shellcheck disable=SC2086
  setsid java ${DEBEZIUM_HEAP:--Xms256m -Xmx2g} -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent \
    -Djava.awt.headless=true -Dlog4j.configuration="file:$dir/log4j.properties" \
    -cp "$LIBS/*" org.apache.kafka.connect.cli.ConnectStandalone \
    "$dir/worker.properties" "$dir/connector.properties" \
    >>"$dir/connect.out" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  echo "DEBEZIUM_DIR=$dir"
  echo "DEBEZIUM_PID=$!"
  [ "${DEBEZIUM_WAIT:-1}" = 1 ] || return 0
  local pid=$! deadline=$((SECONDS + 120))
  until curl -sf "http://127.0.0.1:$rest_port/connectors/outbox/status" 2>/dev/null |
      jq -e '.tasks[0].state == "RUNNING"' >/dev/null 2>&1 &&
      [ "$(psql -qAt -c "SELECT active FROM pg_replication_slots WHERE slot_name = '${DEBEZIUM_SLOT:-debezium}'")" = t ]; do
    kill -0 "$pid" 2>/dev/null || die "debezium exited: $(grep -m3 -E 'ERROR|Exception' "$dir/connect.log" "$dir/connect.out" 2>/dev/null)"
    [ $SECONDS -lt $deadline ] || die "debezium did not start in 120 s: see $dir/connect.log"
    sleep 0.3
  done
  log "debezium streaming: slot ${DEBEZIUM_SLOT:-debezium}, REST http://127.0.0.1:$rest_port"
}

stop() {
  [ -d "$dir" ] || return 0
  stop_pid_file "$dir/pid"
  rm -rf "$dir"
}

case $cmd in
  fetch) fetch ;;
  start) [ -n "$dir" ] || die "usage: $0 start DIR"; start ;;
  stop) [ -n "$dir" ] || die "usage: $0 stop DIR"; stop ;;
  version) echo "$DEBEZIUM_VERSION" ;;
  *) die "usage: $0 fetch | start DIR | stop DIR | version" ;;
esac
