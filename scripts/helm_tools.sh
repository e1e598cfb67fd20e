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
HELM_GO=go1.26.0          # the go directive of helm v3.22.0's go.mod
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

# find_go: the first Go 1.21 or newer (PATH, /usr/local/go, Debian's).
find_go() {
  local candidate
  for candidate in "$(command -v go || true)" /usr/local/go/bin/go \
                   /usr/lib/go/bin/go /usr/lib/go-1.*/bin/go; do
    if [ -x "$candidate" ] && go_at_least "$candidate" 21; then
      echo "$candidate"; return 0
    fi
  done
  return 1
}

# Written after a successful build: the version the binary was built from.
stamp=$dir/bin/helm.version
if [ ! -x "$helm" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$HELM_VERSION" ]; then
  mkdir -p "$dir/bin"
  rm -rf "$dir/go"
  export GOPATH=$dir/go GOBIN=$dir/bin GOFLAGS="-modcacherw -buildvcs=false"
  # Go 1.21+ fetches the toolchain helm's go.mod asks for (go 1.26.0) from
  # the Go module proxy by itself (GOTOOLCHAIN=auto). An older Go (Debian
  # 12's golang-go is 1.19, setup.sh installs it when no go is on PATH)
  # cannot, so fetch that toolchain as the module it is on the proxy.
  if ! go=$(find_go); then
    old=$(command -v go) || die "no Go found to build helm $HELM_VERSION (setup.sh installs golang-go)"
    toolchain=golang.org/toolchain@v0.0.1-$HELM_GO.linux-$("$old" env GOARCH)
    log "fetching the Go toolchain $toolchain from the Go module proxy"
    work=$(mktemp -d)
    (cd "$work" && "$old" mod init helm-tools >/dev/null 2>&1 &&
       GOTOOLCHAIN=local "$old" mod download "$toolchain") ||
      die "could not fetch $toolchain"
    rm -rf "$work"
    root=$GOPATH/pkg/mod/$toolchain
    chmod +x "$root"/bin/* "$root"/pkg/tool/*/*  # zips keep no mode bits
    go=$root/bin/go
  fi
  log "building helm $HELM_VERSION with $("$go" env GOVERSION) from the Go module proxy"
  GOTOOLCHAIN=auto "$go" install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" ||
    die "could not build helm $HELM_VERSION"
  echo "$HELM_VERSION" >"$stamp"
  # The module sources (and a fetched toolchain) are only needed to build.
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
