#!/usr/bin/env python3
"""Checks that every documentation link resolves to a page and an anchor.

    check_links.py REPO_ROOT

Links checked:
  - Markdown links and images in README.md and docs/**/*.md (relative ones;
    http(s) and mailto are left alone), with their #anchor;
  - every "docs/<page>.md[#anchor]" the code (src/, include/), the alert rules
    (docker/prometheus/*.yml) and the scripts name, runbook_url included;
  - every alert in docker/prometheus/outbox-relay.rules.yml carries
    runbook_url: docs/operations/runbooks.md#<alert name lower-cased>.
And no code or alert rule points at a README section any more ("README: X",
'README, "X"'): documentation pointers name docs pages.

Anchors are those mkdocs gives headings (its default slugify), explicit
{#id} attributes and <a id="..."> / <a name="...">. Exit 0 when all resolve;
otherwise one line per broken link and exit 1.
"""
import pathlib
import re
import sys
import unicodedata

ROOT = pathlib.Path(sys.argv[1]).resolve()


def slugify(text):
    # Python-Markdown's toc.slugify, mkdocs' default.
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


_anchor_cache = {}


def anchors(path):
    if path in _anchor_cache:
        return _anchor_cache[path]
    found = set()
    seen = {}
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = re.match(r"^(#{1,6})\s+(.*?)\s*$", line)
        if m:
            title = m.group(2)
            attr = re.search(r"\{#([^}\s]+)\}\s*$", title)
            if attr:
                found.add(attr.group(1))
                continue
            title = re.sub(r"`([^`]*)`", r"\1", title)
            title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)
            slug = slugify(title)
            # Repeated headings get _1, _2 ... as in Python-Markdown.
            if slug in seen:
                seen[slug] += 1
                slug = f"{slug}_{seen[slug]}"
            else:
                seen[slug] = 0
            found.add(slug)
        for a in re.findall(r"<a\s+(?:id|name)=\"([^\"]+)\"", line):
            found.add(a)
    _anchor_cache[path] = found
    return found


errors = []


def check(source, target, base):
    page, _, anchor = target.partition("#")
    path = (base / page).resolve() if page else source
    if not path.is_file():
        errors.append(f"{source.relative_to(ROOT)}: {target}: no such file")
        return
    if anchor and path.suffix == ".md" and anchor not in anchors(path):
        errors.append(f"{source.relative_to(ROOT)}: {target}: no anchor "
                      f"#{anchor} in {path.relative_to(ROOT)}")


md_link = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
md_files = [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))
for f in md_files:
    in_fence = False
    for line in f.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if in_fence or line.startswith("    "):
            continue
        for target in md_link.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"^[a-z]+:", target):
                continue
            check(f, target, f.parent)

docs_ref = re.compile(r"\bdocs/[\w./-]+\.md(?:#[\w.-]+)?")
stale_readme = re.compile(r"(?<!src/)README(?:\.md)?(?::\s+[\"A-Z]|,\s+\")")
code_files = [p for d in ("src", "include", "docker", "scripts", "config", "sql")
              for p in sorted((ROOT / d).rglob("*")) if p.is_file()
              and p.suffix in (".cc", ".h", ".in", ".yml", ".yaml", ".sh",
                               ".sql", ".html")]
for f in code_files:
    text = f.read_text(encoding="utf-8", errors="replace")
    for target in docs_ref.findall(text):
        check(f, target, ROOT)
    for n, line in enumerate(text.splitlines(), 1):
        if stale_readme.search(line):
            errors.append(f"{f.relative_to(ROOT)}:{n}: points at a README "
                          f"section; name a docs page and anchor instead")

rules = ROOT / "docker/prometheus/outbox-relay.rules.yml"
alert = None
urls = {}
for line in rules.read_text(encoding="utf-8").splitlines():
    m = re.match(r"^\s*-\s*alert:\s*(\S+)", line)
    if m:
        alert = m.group(1)
        urls[alert] = None
    m = re.match(r"^\s*runbook_url:\s*\"?([^\"\s]+)\"?", line)
    if m and alert:
        urls[alert] = m.group(1)
for name, url in urls.items():
    want = f"docs/operations/runbooks.md#{name.lower()}"
    if url != want:
        errors.append(f"{rules.relative_to(ROOT)}: alert {name}: runbook_url "
                      f"is {url}, want {want}")

for e in errors:
    print(e)
print(f"{len(md_files)} pages, {len(code_files)} code files, {len(urls)} "
      f"alerts checked: {len(errors)} broken", file=sys.stderr)
sys.exit(1 if errors else 0)
