#!/usr/bin/env bash
# A PostgreSQL and a Kafka broker that take only authenticated, encrypted
# connections from the relay, for tls_e2e_test (docs/operations/security.md
# shows the same configurations):
#
#   tls_servers.sh start DIR   certificates (openssl), both servers; writes
#                              DIR/env (KEY=VALUE lines, also printed)
#   tls_servers.sh stop DIR    stops both and removes DIR
#
# DIR/certs: ca.pem (the CA of everything), other-ca.pem (a CA that signed
# nothing here), server.pem/.key (CN localhost, SAN localhost and
# 127.0.0.1), client.pem/.key (CN relay), client-enc.key (the same key
# encrypted with OUTBOX_TLS_KEY_PASSWORD's value), expired.pem (a client
# certificate for relay that expired in 2021).
# PostgreSQL: ssl = on; role relay (LOGIN REPLICATION SUPERUSER, password
# OUTBOX_TLS_PG_PASSWORD) may connect only over TLS with scram-sha-256 and
# a client certificate (clientcert=verify-full), normal and replication
# connections; postgres keeps trust over the socket and plain loopback TCP
# for the test's own setup.
# Kafka (OUTBOX_KAFKA_VERSION's; DIR/env has the version): SASL_SSL
# (SCRAM-SHA-512, user relay created at format time with StorageTool
# --add-scram, and PLAIN with the same password, for a librdkafka older than
# 2.6.1 against Kafka 4) and SSL with ssl.client.auth=required (mTLS),
# besides the PLAINTEXT listener the test reads back through.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
scripts="$here/../../scripts"
source "$scripts/lib.sh"

cmd=${1:-}; dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|stop DIR"
PG_PASSWORD=pg-secret-7f3a9c
KAFKA_PASSWORD=kafka-secret-2b8e41
KEY_PASSWORD=key-secret-91d0c5

certs() {
  local c=$1
  mkdir -p "$c"
  cd "$c"
  command -v openssl >/dev/null || die "openssl not found: run scripts/setup.sh"
  local subj=/O=outbox-relay-test
  for ca in ca other-ca; do
    openssl req -x509 -new -nodes -newkey rsa:2048 -keyout "$ca.key" \
      -out "$ca.pem" -days 30 -subj "$subj/CN=$ca" 2>/dev/null
  done
  openssl req -new -nodes -newkey rsa:2048 -keyout server.key -out server.csr \
    -subj "$subj/CN=localhost" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >server.ext
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -out server.pem -days 30 -extfile server.ext 2>/dev/null
  openssl req -new -nodes -newkey rsa:2048 -keyout client.key -out client.csr \
    -subj "$subj/CN=relay" 2>/dev/null
  openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -out client.pem -days 30 2>/dev/null
  openssl pkcs8 -topk8 -in client.key -out client-enc.key \
    -passout "pass:$KEY_PASSWORD" -v2 aes-256-cbc
  # An expired certificate: `openssl ca` takes explicit dates.
  mkdir -p ca-db; : >ca-db/index.txt; echo 01 >ca-db/serial
  cat >ca.cnf <<CNF
[ca]
default_ca = test
[test]
database = $c/ca-db/index.txt
serial = $c/ca-db/serial
new_certs_dir = $c/ca-db
default_md = sha256
policy = any
[any]
commonName = supplied
organizationName = optional
CNF
  openssl ca -batch -config ca.cnf -cert ca.pem -keyfile ca.key \
    -in client.csr -out expired.pem -notext \
    -startdate 20200101000000Z -enddate 20210101000000Z 2>/dev/null
  # Kafka reads a PEM key store: the unencrypted PKCS#8 key, then the chain.
  openssl pkcs8 -topk8 -nocrypt -in server.key -out server-pkcs8.key
  cat server-pkcs8.key server.pem >server-keystore.pem
  chmod 644 ./*.pem; chmod 600 ./*.key  # libpq refuses a readable key
  cd - >/dev/null
}

start_pg() {
  local pg=$1 c=$2
  "$scripts/pg.sh" start "$pg" >"$pg.env"
  cp "$c/server.pem" "$c/server.key" "$c/ca.pem" "$pg/data/"
  chmod 600 "$pg/data/server.key"
  if [ "$(id -u)" = 0 ]; then
    chown "$(stat -c %U "$pg/data")" "$pg/data/server.pem" "$pg/data/server.key" "$pg/data/ca.pem"
  fi
  cat >>"$pg/data/postgresql.conf" <<CONF
ssl = on
ssl_cert_file = 'server.pem'
ssl_key_file = 'server.key'
ssl_ca_file = 'ca.pem'
password_encryption = 'scram-sha-256'
CONF
  cat >"$pg/data/pg_hba.conf" <<HBA
local all all trust
hostssl all relay 127.0.0.1/32 scram-sha-256 clientcert=verify-full
hostssl replication relay 127.0.0.1/32 scram-sha-256 clientcert=verify-full
host all postgres 127.0.0.1/32 trust
host replication postgres 127.0.0.1/32 trust
HBA
  "$scripts/pg.sh" restart "$pg" fast >/dev/null
  "$PG_DEBIAN_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$pg" -p "$(cat "$pg/port")" \
    -U postgres -d postgres \
    -c "CREATE ROLE relay LOGIN REPLICATION SUPERUSER PASSWORD '$PG_PASSWORD'" >/dev/null
}

start_kafka() {
  local k=$1 c=$2 sasl_port ssl_port
  sasl_port=$(free_port); ssl_port=$(free_port)
  cat >"$k.properties" <<PROPS
ssl.keystore.type=PEM
ssl.keystore.location=$c/server-keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location=$c/ca.pem
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_relay="$KAFKA_PASSWORD";
listener.name.ssl.ssl.client.auth=required
PROPS
  OUTBOX_KAFKA_LISTENERS="SASL_SSL://127.0.0.1:$sasl_port,SSL://127.0.0.1:$ssl_port" \
  OUTBOX_KAFKA_PROPERTIES="$k.properties" \
  OUTBOX_KAFKA_FORMAT_ARGS="--add-scram
SCRAM-SHA-512=[name=relay,password=$KAFKA_PASSWORD]" \
    "$scripts/kafka.sh" start "$k" >"$k.env"
  echo "OUTBOX_TLS_KAFKA_SASL_SSL=127.0.0.1:$sasl_port"
  echo "OUTBOX_TLS_KAFKA_MTLS=127.0.0.1:$ssl_port"
}

case $cmd in
  start)
    [ ! -d "$dir" ] || "$0" stop "$dir"
    mkdir -p "$dir"; dir=$(cd "$dir" && pwd); chmod 755 "$dir"
    certs "$dir/certs"
    start_pg "$dir/pg" "$dir/certs"
    extra=$(start_kafka "$dir/kafka" "$dir/certs")
    {
      tr -d "'" <"$dir/pg.env"
      tr -d "'" <"$dir/kafka.env"
      echo "$extra"
      echo "OUTBOX_TLS_CERTS=$dir/certs"
      echo "OUTBOX_TLS_PG_PASSWORD=$PG_PASSWORD"
      echo "OUTBOX_TLS_KAFKA_PASSWORD=$KAFKA_PASSWORD"
      echo "OUTBOX_TLS_KEY_PASSWORD=$KEY_PASSWORD"
    } >"$dir/env"
    cat "$dir/env" ;;
  stop) "$here/servers.sh" stop "$dir" ;;  # the same DIR/pg, DIR/kafka
  *) die "usage: $0 start|stop DIR" ;;
esac
