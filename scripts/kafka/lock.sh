#!/usr/bin/env bash
# Rewrites scripts/kafka/jars.sha256 from scripts/kafka/pom.xml: the broker's
# runtime classpath as Maven resolves it, each jar's Maven Central path and
# sha256. Run after changing the pom (needs Maven); kafka_fetch in
# scripts/lib.sh then fetches exactly these jars with curl.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cd "$OUTBOX_ROOT/scripts/kafka"
mvn -q -B dependency:copy-dependencies -DincludeScope=runtime \
  -Dmdep.useRepositoryLayout=true -DoutputDirectory="$dir"
(cd "$dir" && find . -name '*.jar' | sed 's|^\./||' | sort | xargs sha256sum) \
  >jars.sha256
echo "wrote scripts/kafka/jars.sha256 ($(wc -l <jars.sha256) jars)"
