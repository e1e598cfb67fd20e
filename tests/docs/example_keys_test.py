#!/usr/bin/env python3
"""config/relay.example.yaml names every key of the key table, and nothing
else (ctest docs_example_keys_test).

The key list comes from the code: outbox-docgen writes the configuration
reference from the one table (src/config/config_keys.cc), and this test
reads the keys off that page, so a key added to the table fails here until
the example explains it. The example is parsed as YAML: a key must be set
(to its default, or to a value the comment explains), not commented out,
so the example stays a file the relay loads; the one exception is the
commented-out outbox.tables entry, which shows the keys of an entry (an
entry set there would add a table), read with its '# ' removed. Map keys (kafka.properties,
outbox.headers, ...) count as one key whatever entries they hold; the keys
of an outbox.tables entry are outbox.tables[].KEY.

Usage: example_keys_test.py BIN_DIR REPO_ROOT
"""
import os
import re
import subprocess
import sys
import tempfile

import yaml

EXAMPLE = "config/relay.example.yaml"
HEADING = re.compile(r"^### `([^`]+)` \{#")
TYPE = re.compile(r"^type: (\w+)")


def table_keys(bin_dir):
    """{path: type} from the configuration page outbox-docgen writes now."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([os.path.join(bin_dir, "outbox-docgen"), out], check=True)
        with open(os.path.join(out, "reference/configuration.md")) as f:
            lines = f.read().splitlines()
    keys, current = {}, None
    for line in lines:
        m = HEADING.match(line)
        if m:
            current = m.group(1)
            keys[current] = None
            continue
        m = TYPE.match(line)
        if m and current and keys[current] is None:
            keys[current] = m.group(1)
    return keys


def uncomment_tables(text):
    """The example with its commented-out outbox.tables entries live."""
    out, inside = [], False
    for line in text.splitlines():
        if re.match(r"^  tables:", line):
            inside = True
        elif inside and not line.startswith("    "):
            inside = False
        m = re.match(r"^    # ((?:- |  ).*)$", line) if inside else None
        out.append("    " + re.sub(r"\s+# .*$", "", m.group(1)) if m else line)
    return "\n".join(out) + "\n"


def example_keys(node, keys, prefix=""):
    """The key paths the example sets."""
    found = set()
    for name, value in (node or {}).items():
        path = prefix + str(name)
        kind = keys.get(path)
        if kind == "list" and isinstance(value, list):
            found.add(path)
            for entry in value:
                if isinstance(entry, dict):
                    found |= example_keys(entry, keys, path + "[].")
        elif kind is not None or not isinstance(value, dict):
            found.add(path)  # a key (a map key with its entries), or unknown
        else:
            found |= example_keys(value, keys, path + ".")
    return found


def main():
    bin_dir, root = sys.argv[1], sys.argv[2]
    keys = table_keys(bin_dir)
    if len(keys) < 50:
        sys.exit("read only %d keys off the generated configuration page" % len(keys))
    with open(os.path.join(root, EXAMPLE)) as f:
        found = example_keys(yaml.safe_load(uncomment_tables(f.read())), keys)
    missing = sorted(set(keys) - found)
    extra = sorted(found - set(keys))
    for k in missing:
        print("%s lacks key %s (type %s): add it with its default and what it does"
              % (EXAMPLE, k, keys[k]))
    for k in extra:
        print("%s sets %s, which is no key of the table (src/config/config_keys.cc)"
              % (EXAMPLE, k))
    if missing or extra:
        sys.exit(1)
    print("%s sets each of the %d keys of the table, and nothing else" % (EXAMPLE, len(keys)))


if __name__ == "__main__":
    main()
