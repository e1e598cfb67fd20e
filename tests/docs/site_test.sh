#!/usr/bin/env bash
# The documentation site: `mkdocs build --strict` (a broken link, a missing
# page or an anchor that does not exist fails it), then headless Chromium
# opens the built home page and the configuration reference and the test
# checks what rendered: titles, the navigation, a key's section.
#
#   site_test.sh REPO_ROOT SITE_DIR
set -euo pipefail
source "$1/scripts/lib.sh"
site=$2
export NO_MKDOCS_2_WARNING=1  # mkdocs-material's end-of-life notice
mkdocs="$OUTBOX_CACHE/mkdocs/bin/mkdocs"
[ -x "$mkdocs" ] || die "mkdocs not installed in $OUTBOX_CACHE/mkdocs: run scripts/setup.sh"
rm -rf "$site"
"$mkdocs" build --strict --quiet -f "$OUTBOX_ROOT/mkdocs.yml" -d "$site"

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
render() {  # render FILE: the DOM after scripts ran, on stdout
  /usr/bin/chromium --headless --no-sandbox --disable-gpu --no-first-run \
    --user-data-dir="$work/profile" --virtual-time-budget=3000 \
    --dump-dom "file://$1" 2>"$work/chromium.log"
}
expect() {  # expect FILE TEXT...: each TEXT is in the rendered DOM
  local dom; dom=$(render "$1")
  [ -n "$dom" ] || { cat "$work/chromium.log" >&2; die "chromium rendered nothing for $1"; }
  shift
  for t in "$@"; do
    grep -qF -- "$t" <<<"$dom" || die "rendered page lacks: $t"
  done
}
expect "$site/index.html" '<title>outbox-relay</title>' 'md-nav' \
  'Getting started' 'Runbooks' 'Configuration keys'
expect "$site/reference/configuration/index.html" \
  'Configuration keys - outbox-relay' 'id="postgres.slot"' 'outbox_relay' \
  'id="kafka.exactly_once"'
echo "site built strict; home and configuration reference render"
