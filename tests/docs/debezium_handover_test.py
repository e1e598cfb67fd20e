#!/usr/bin/env python3
"""The handover commands of docs/migration/debezium.md, offline (ctest
docs_debezium_handover_test).

The page's blocks opening with `# handover: NAME` are run as printed
against a real Kafka Connect worker by debezium_migrate_test (bench/
debezium_migrate.sh: save, pause, offsets, stop, check, delete). What no
test can run here is Strimzi's block (no Kubernetes, no operator), so this
checks that:
  * every handover block is valid shell (`bash -n`), and the REST ones call
    only the Connect endpoints the page names, with the right method;
  * the Strimzi block's `kubectl patch ... --type merge -p JSON` bodies are
    JSON using only fields Strimzi's KafkaConnector CRD declares (the
    schema below: spec.state running|paused|stopped, Strimzi 0.38+;
    spec.listOffsets.toConfigMap.name, 0.44+; from the CRD of
    strimzi-kafka-operator packaging/install/cluster-operator/
    047-Crd-kafkaconnector.yaml, versions v1beta2 and v1), its annotation
    is strimzi.io/connector-offsets with a value the operator knows
    (list, alter, reset), its waits name Connect's states, and every
    kubectl command addresses the KafkaConnector (or the ConfigMap the
    listing writes).

Usage: debezium_handover_test.py REPO_ROOT
"""
import json
import re
import shlex
import subprocess
import sys

import jsonschema

PAGE = "docs/migration/debezium.md"
REST_BLOCKS = ["save", "pause", "offsets", "stop", "check", "delete"]
# (method, path after /connectors/$CONNECTOR) the REST blocks may call:
# Kafka Connect's REST API (pause, status, config, delete: every version;
# stop and GET offsets: 3.5+, KIP-875).
REST_ENDPOINTS = {("GET", "/config"), ("PUT", "/pause"), ("GET", "/status"),
                  ("GET", "/offsets"), ("PUT", "/stop"), ("DELETE", "")}



def _configmap_ref(key):
    """{KEY: {name: string}}, required: listOffsets and alterOffsets."""
    return {"type": "object", "required": [key], "additionalProperties": False,
            "properties": {key: {"type": "object", "additionalProperties": False,
                                 "properties": {"name": {"type": "string"}}}}}


# The KafkaConnector spec fields the page patches, as the CRD declares them
# (additionalProperties false here: a field the CRD does not declare fails).
_SPEC_FIELDS = {
    "class": {"type": "string"},
    "tasksMax": {"type": "integer", "minimum": 1},
    "autoRestart": {"type": "object"},
    "version": {"type": "string"},
    "config": {"type": "object"},
    "pause": {"type": "boolean"},
    "state": {"type": "string", "enum": ["paused", "stopped", "running"]},
    "listOffsets": _configmap_ref("toConfigMap"),
    "alterOffsets": _configmap_ref("fromConfigMap"),
}
PATCH_SCHEMA = {"type": "object", "additionalProperties": False,
                "properties": {"spec": {"type": "object",
                                        "additionalProperties": False,
                                        "properties": _SPEC_FIELDS}}}
OFFSETS_ANNOTATION = "strimzi.io/connector-offsets"
OFFSETS_ACTIONS = {"list", "alter", "reset"}
CONNECT_STATES = {"RUNNING", "PAUSED", "STOPPED", "FAILED", "UNASSIGNED"}


def blocks(text):
    """{name: code} of the fenced blocks opening with `# handover: NAME`."""
    out = {}
    for m in re.finditer(r"^```sh\n# handover: (\w+)\n(.*?)^```$", text,
                         re.S | re.M):
        out[m.group(1)] = m.group(2)
    return out


def commands(code):
    """The block's commands, continuations joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", code)
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def check_rest(name, code, errors):
    for m in re.finditer(r"curl (-fsS )?(?:-X (\w+) )?\"\$CONNECT/connectors/"
                         r"\$CONNECTOR([^\"]*)\"", code):
        call = (m.group(2) or "GET", m.group(3))
        if call not in REST_ENDPOINTS:
            errors.append(f"{name}: {call[0]} /connectors/NAME{call[1]} is not "
                          "an endpoint the page names")
    if "$CONNECT/" not in code:
        errors.append(f"{name}: calls no Connect endpoint")


def check_strimzi(code, errors):
    kinds = set()
    for cmd in commands(code):
        for part in re.split(r"\s*\|\s*|\$\(|\)\"?\s*\]?", cmd):
            part = part.strip()
            if not part.startswith("kubectl "):
                continue
            argv = shlex.split(part)
            verb = argv[1]
            target = next(a for a in argv[2:] if not a.startswith("-"))
            if target not in ("kafkaconnector", "configmap") and \
                    not target.startswith("kafkaconnector/"):
                errors.append(f"strimzi: {part!r} addresses {target}")
            kinds.add(verb)
            if verb == "patch":
                if argv[argv.index("--type") + 1] != "merge":
                    errors.append(f"strimzi: {part!r} is not a merge patch")
                body = json.loads(argv[argv.index("-p") + 1])
                try:
                    jsonschema.validate(body, PATCH_SCHEMA)
                except jsonschema.ValidationError as e:
                    errors.append(f"strimzi: {part!r}: {e.message} (not in "
                                  "the KafkaConnector CRD)")
            elif verb == "annotate":
                key, _, value = argv[-1].partition("=")
                if key != OFFSETS_ANNOTATION or value not in OFFSETS_ACTIONS:
                    errors.append(f"strimzi: {part!r}: not {OFFSETS_ANNOTATION}"
                                  f"={'|'.join(sorted(OFFSETS_ACTIONS))}")
            elif verb == "wait":
                m = next((re.fullmatch(r"--for=jsonpath=\{\.status\."
                                       r"connectorStatus\.connector\.state"
                                       r"\}=(\w+)", a) for a in argv
                          if a.startswith("--for=")), None)
                if not m or m.group(1) not in CONNECT_STATES:
                    errors.append(f"strimzi: {part!r} waits for no Connect "
                                  "state")
    for verb in ("get", "patch", "annotate", "wait", "delete"):
        if verb not in kinds:
            errors.append(f"strimzi: no kubectl {verb}")


def main():
    root = sys.argv[1]
    with open(f"{root}/{PAGE}", encoding="utf-8") as f:
        found = blocks(f.read())
    errors = []
    for name in REST_BLOCKS + ["strimzi"]:
        if name not in found:
            errors.append(f"{PAGE}: no block opening with '# handover: {name}'")
    for name, code in found.items():
        r = subprocess.run(["bash", "-n"], input=code, text=True,
                           capture_output=True)
        if r.returncode:
            errors.append(f"{name}: not valid shell: {r.stderr.strip()}")
        if name in REST_BLOCKS:
            check_rest(name, code, errors)
    if "strimzi" in found:
        check_strimzi(found["strimzi"], errors)
    for e in errors:
        print(e)
    print(f"{len(found)} handover blocks checked: "
          f"{'ok' if not errors else f'{len(errors)} problems'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
