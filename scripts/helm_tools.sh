#!/usr/bin/env bash
# The tools of the Helm chart test (tests/helm, ctest label helm), under
# $OUTBOX_CACHE/helm: helm built from the Go module proxy, and PyPI's
# kubernetes-validate (bundled Kubernetes JSON schemas, offline) in a venv,
# since Debian 12's pip refuses to install outside one. Each is skipped when
# the pinned version is already there, so a re-run is a no-op. promtool
# comes from Debian's prometheus package (setup.sh).
#
#   scripts/helm_tools.sh        (setup.sh runs it)
set -euo pipefail
source "$(dirname "$0")/lib.sh"

HELM_VERSION=v3.22.0
KUBERNETES_VALIDATE_VERSION=1.37.0
dir=$OUTBOX_CACHE/helm
helm=$dir/bin/helm

# go_at_least BINARY MINOR: true when BINARY is Go 1.MINOR or newer.
go_at_least() {
  local v
  v=$("$1" env GOVERSION 2>/dev/null) || return 1   # go1.26.8
  v=${v#go1.}; v=${v%%[!0-9]*}
  [ -n "$v" ] && [ "$v" -ge "$2" ]
}

# Go 1.21+ fetches the toolchain helm's go.mod asks for from the Go module
# proxy itself (GOTOOLCHAIN=auto), so any 1.21+ will do.
go=
for candidate in "$(command -v go || true)" /usr/local/go/bin/go \
                 /usr/lib/go/bin/go /usr/lib/go-1.*/bin/go; do
  if [ -x "$candidate" ] && go_at_least "$candidate" 21; then
    go=$candidate; break
  fi
done

# The module version built into the binary (`helm version` would print
# what the release Makefile's -ldflags set, which go install does not).
helm_module_version() {
  [ -x "$helm" ] && [ -n "$go" ] || return 0
  "$go" version -m "$helm" | awk '$1 == "mod" && $2 == "helm.sh/helm/v3" { print $3 }'
}

if [ "$(helm_module_version)" != "$HELM_VERSION" ]; then
  [ -n "$go" ] || die "helm $HELM_VERSION is built with Go, and no Go 1.21 or newer was found (PATH, /usr/local/go, /usr/lib/go*): install one (Debian 12: golang-1.21-go or newer from bookworm-backports)"
  log "building helm $HELM_VERSION with $("$go" env GOVERSION) from the Go module proxy"
  mkdir -p "$dir/bin"
  GOPATH=$dir/go GOBIN=$dir/bin GOFLAGS="-modcacherw -buildvcs=false" \
    GOTOOLCHAIN=auto "$go" install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" ||
    die "could not build helm $HELM_VERSION"
  # The module sources are only needed to build.
  rm -rf "$dir/go"
fi

venv=$dir/venv
if ! "$venv/bin/python" -c 'import sys, kubernetes_validate.version as v; sys.exit(v.__version__ != sys.argv[1])' \
     "$KUBERNETES_VALIDATE_VERSION" 2>/dev/null; then
  log "installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION from PyPI in $venv"
  rm -rf "$venv"
  # Debian's Python (python3-venv), not whichever python3 comes first.
  py=/usr/bin/python3; [ -x "$py" ] || py=$(command -v python3)
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" ||
    die "could not install kubernetes-validate from PyPI"
fi
