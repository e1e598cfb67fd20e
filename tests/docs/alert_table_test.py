#!/usr/bin/env python3
"""docs/operations/monitoring.md's alert table is the rules file's alerts
(ctest docs_alert_table_test).

Each alert of docker/prometheus/outbox-relay.rules.yml (the one source the
chart renders too) has exactly one row, in the file's order, linking its
runbook_url anchor and giving its `for` ("at once" without one); no row
names an alert the file lacks. The "Fires when" column is prose: it is not
checked beyond being non-empty.

Each runbook_url is an absolute link (Alertmanager shows a relative one as
text): https://...docs/operations/runbooks.md#<anchor> (the chart swaps
the part before '#' for prometheusRule.runbookBaseUrl), and <anchor> is
the id of a heading of that page without an explicit {#id}, so the same
on GitHub and on the mkdocs site.

Usage: alert_table_test.py REPO_ROOT
"""
import os
import re
import sys

import yaml

RULES = "docker/prometheus/outbox-relay.rules.yml"
PAGE = "docs/operations/monitoring.md"
RUNBOOKS = "docs/operations/runbooks.md"
URL = re.compile(r"^https://[^#\s]+/" + re.escape(RUNBOOKS) + r"#([^#\s]+)$")
ROW = re.compile(r"^\| \[`(\w+)`\]\(([^)]*)\) \| (.+) \| ([^|]+) \|$")


def heading_ids(path):
    """The anchors of the page's headings that have no explicit {#id}, as
    mkdocs' toc (and GitHub) make them."""
    ids = set()
    with open(path) as f:
        for line in f:
            m = re.match(r"^#{1,6} (.+?)\s*$", line)
            if m and not re.search(r"\{#[^}]*\}$", m.group(1)):
                slug = re.sub(r"[^\w\s-]", "", m.group(1)).strip().lower()
                ids.add(re.sub(r"[-\s]+", "-", slug))
    return ids


def main():
    root = sys.argv[1]
    with open(os.path.join(root, RULES)) as f:
        groups = yaml.safe_load(f)["groups"]
    alerts = [r for g in groups for r in g["rules"] if "alert" in r]
    with open(os.path.join(root, PAGE)) as f:
        rows = [ROW.match(l) for l in f.read().splitlines()]
    rows = [m for m in rows if m]
    errors = []
    want = [a["alert"] for a in alerts]
    have = [m.group(1) for m in rows]
    for name in want:
        if name not in have:
            errors.append("%s: no row for alert %s of %s" % (PAGE, name, RULES))
    for name in have:
        if name not in want:
            errors.append("%s: a row for %s, which %s does not have" % (PAGE, name, RULES))
    if not errors and have != want:
        errors.append("%s: rows in the order %s, the rules file's is %s" % (PAGE, have, want))
    anchors = heading_ids(os.path.join(root, RUNBOOKS))
    for a in alerts:
        url = a.get("annotations", {}).get("runbook_url")
        if url is None:
            continue
        m = URL.match(url)
        if not m:
            errors.append("%s: %s's runbook_url %r is not https://.../%s#<anchor>"
                          % (RULES, a["alert"], url, RUNBOOKS))
        elif m.group(1) not in anchors:
            errors.append("%s: %s's runbook_url names #%s, which no heading of %s has"
                          % (RULES, a["alert"], m.group(1), RUNBOOKS))
    by_name = {m.group(1): m for m in rows}
    for a in alerts:
        m = by_name.get(a["alert"])
        if not m:
            continue
        link = "runbooks.md#" + a["annotations"]["runbook_url"].split("#", 1)[1] \
            if "runbook_url" in a.get("annotations", {}) else None
        if m.group(2) != link:
            errors.append("%s: %s links %s, its runbook_url says %s"
                          % (PAGE, a["alert"], m.group(2), link))
        want_for = a.get("for", "at once")
        if m.group(4).strip() != want_for:
            errors.append("%s: %s's For is %r, the rule's is %r"
                          % (PAGE, a["alert"], m.group(4).strip(), want_for))
        if not m.group(3).strip():
            errors.append("%s: %s's row says nothing" % (PAGE, a["alert"]))
    for e in errors:
        print(e)
    if errors:
        sys.exit(1)
    print("%s lists the %d alerts of %s, with their runbooks and durations"
          % (PAGE, len(alerts), RULES))


if __name__ == "__main__":
    main()
