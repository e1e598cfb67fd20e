#!/usr/bin/env python3
"""Offline tests of the Helm chart deploy/helm/outbox-relay (ctest helm_chart).

For the default values and every tests/helm/values/*.yaml: `helm lint
--strict`, `helm template`, then every rendered object is checked:
  * built-in kinds against the Kubernetes JSON schemas bundled by
    kubernetes-validate (strict: unknown fields are errors), version
    KUBERNETES_VERSION; a kind without a bundled schema is an error;
  * PrometheusRule (a CRD, no bundled schema): a strict schema of the
    fields the chart uses, its groups equal to docker/prometheus's rules
    file, `promtool check rules` and the rules' unit tests
    (outbox-relay.rules.test.yml) run against the rendered groups;
  * ServiceMonitor (a CRD): a strict schema of the fields the chart uses,
    its selector and port matching a rendered Service;
  * what the relay needs from its pods: probes (/healthz, /readyz),
    security context (uid 10001, read-only root, no capabilities), grace
    period above kafka.flush_timeout_ms, http.listen on 0.0.0.0, every
    ${VAR} of the config provided by env or a Secret, selectors that
    match, the dashboard ConfigMap equal to docker/grafana's JSON;
  * each rendered relay config accepted by outbox-relay's own parser;
  * every container command a program the image installs (the paths
    cmake/install.cmake gives the Debian package docker/Dockerfile
    installs, its ENTRYPOINT among them).
Then every tests/helm/invalid/*.yaml must FAIL (at render or a check) with
the text its `# expect:` line names, and a copy of the tree whose docker
rules file gained an alert (or a broken rule) must render it (or fail).

Usage: chart_test.py --helm HELM --promtool PROMTOOL --repo ROOT --relay BIN
Run with the Python of the venv setup.sh makes (kubernetes-validate).
"""
import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import jsonschema
import kubernetes_validate
import yaml

KUBERNETES_VERSION = "1.37.0"
RELEASE = "outbox"
NAMESPACE = "outbox"
CHART = "deploy/helm/outbox-relay"
RULES = "docker/prometheus/outbox-relay.rules.yml"
RULES_TEST = "docker/prometheus/outbox-relay.rules.test.yml"
DASHBOARD = "docker/grafana/dashboards/outbox-relay.json"

# What each values file must render, beyond the checks every render gets.
EXPECT = {
    "default": {"workloads": {"outbox-outbox-relay-app": ("Deployment", 2)},
                "rule": True},
    "exactly-once.yaml": {
        "workloads": {"outbox-outbox-relay-orders": ("Deployment", 2)},
        "rule": True, "grace": 75, "secret": True},
    "poller.yaml": {"workloads": {"outbox-outbox-relay-app": ("Deployment", 1)},
                    "rule": False, "command": "/usr/bin/outbox-poller"},
    "databases.yaml": {"workloads": {
        "outbox-outbox-relay-orders": ("Deployment", 2),
        "outbox-outbox-relay-billing": ("Deployment", 2),
        "outbox-outbox-relay-shipping": ("Deployment", 2)}, "rule": True},
    "statefulset.yaml": {
        "workloads": {"outbox-outbox-relay-app": ("StatefulSet", 2)},
        "rule": True},
    # extraVolumes, extraVolumeMounts and extraEnv rendered into the pod.
    "tls.yaml": {"workloads": {"outbox-outbox-relay-app": ("Deployment", 2)},
                 "rule": True, "volume": ("tls", "/etc/outbox-relay-tls"),
                 "env": "KAFKA_SASL_PASSWORD"},
}

# Strict schemas (additionalProperties false) of the CRD fields the chart
# renders, after prometheus-operator's monitoring.coreos.com/v1 CRDs.
_META = {"type": "object", "required": ["name", "namespace"],
         "properties": {"name": {"type": "string"},
                        "namespace": {"type": "string"},
                        "labels": {"type": "object",
                                   "additionalProperties": {"type": "string"}},
                        "annotations": {"type": "object"}},
         "additionalProperties": False}
_STR_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_DURATION = {"type": "string",
             "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?"
                        r"(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}


def _crd(kind, spec):
    """A monitoring.coreos.com/v1 object of this kind and spec schema."""
    return {"type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
            "additionalProperties": False,
            "properties": {"apiVersion": {"const": "monitoring.coreos.com/v1"},
                           "kind": {"const": kind}, "metadata": _META, "spec": spec}}


SERVICE_MONITOR_SCHEMA = _crd("ServiceMonitor", {
    "type": "object", "required": ["selector", "endpoints"],
    "additionalProperties": False,
    "properties": {
        "jobLabel": {"type": "string"},
        "selector": {"type": "object", "additionalProperties": False,
                     "properties": {"matchLabels": _STR_MAP}},
        "namespaceSelector": {
            "type": "object", "additionalProperties": False,
            "properties": {"any": {"type": "boolean"},
                           "matchNames": {"type": "array",
                                          "items": {"type": "string"}}}},
        "endpoints": {"type": "array", "minItems": 1, "items": {
            "type": "object", "additionalProperties": False,
            "properties": {
                "port": {"type": "string"},
                "path": {"type": "string"},
                "interval": _DURATION,
                "scrapeTimeout": _DURATION,
                "relabelings": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False,
                    "properties": {
                        "sourceLabels": {"type": "array", "items": {
                            "type": "string",
                            "pattern": "^[a-zA-Z_][a-zA-Z0-9_]*$"}},
                        "targetLabel": {"type": "string"},
                        "action": {"enum": ["replace", "keep", "drop",
                                            "labelmap", "labeldrop",
                                            "labelkeep"]}}}}}}}}})
PROMETHEUS_RULE_SCHEMA = _crd("PrometheusRule", {"type": "object", "required": ["groups"],
                 "additionalProperties": False,
                 "properties": {"groups": {"type": "array", "minItems": 1, "items": {
                     "type": "object", "required": ["name", "rules"],
                     "additionalProperties": False,
                     "properties": {
                         "name": {"type": "string"},
                         "interval": _DURATION,
                         "rules": {"type": "array", "items": {
                             "type": "object", "required": ["expr"],
                             "additionalProperties": False,
                             "properties": {
                                 "alert": {"type": "string"},
                                 "record": {"type": "string"},
                                 "expr": {"type": "string"},
                                 "for": _DURATION,
                                 "keep_firing_for": _DURATION,
                                 "labels": _STR_MAP,
                                 "annotations": _STR_MAP}}}}}}}})

# resource.Quantity's syntax (the JSON schemas only say "string").
QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
VAR_RE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}")


class Tools:
    def __init__(self, helm, promtool, repo, relay):
        self.helm, self.promtool, self.repo, self.relay = helm, promtool, repo, relay
        self.notes = set()

    def run(self, cmd, **kw):
        return subprocess.run(cmd, capture_output=True, text=True, **kw)

    def lint(self, chart, values):
        cmd = [self.helm, "lint", "--strict", "--kube-version", KUBERNETES_VERSION, chart]
        if values:
            cmd += ["-f", values]
        r = self.run(cmd)
        return r.returncode == 0, r.stdout + r.stderr

    def template(self, chart, values):
        cmd = [self.helm, "template", RELEASE, chart, "--namespace", NAMESPACE,
               "--kube-version", KUBERNETES_VERSION]
        if values:
            cmd += ["-f", values]
        r = self.run(cmd)
        if r.returncode != 0:
            return None, r.stderr.strip()
        return [d for d in yaml.safe_load_all(r.stdout) if d], ""


# Labels prometheus-operator gives every series a ServiceMonitor scrapes,
# besides namespace: per pod, or (service) not a label of the pods.
OPERATOR_LABELS = {"service", "pod", "container", "endpoint", "instance"}
PAIR_ALERTS = ("OutboxRelayNoActiveInstance", "OutboxRelayMultipleActive")
BY_RE = re.compile(r"\bby \(([^)]*)\)")


def check_pair_labels(docs, groups):
    """Issue 33: the pair alerts count roles `by (...)` labels which the
    ServiceMonitor's relabelings take from labels every relay pod has, and
    which tell the release's databases apart (one group per pair)."""
    errors = []
    rules = {r["alert"]: r for g in groups for r in g["rules"] if "alert" in r}
    sms = [d for d in docs if d["kind"] == "ServiceMonitor"]
    workloads = list(pod_specs(docs))
    if not sms or not workloads:
        return errors
    relabel = {}
    for r in sms[0]["spec"]["endpoints"][0].get("relabelings", []):
        relabel[r["targetLabel"]] = r["sourceLabels"]
    for alert in PAIR_ALERTS:
        m = BY_RE.search(rules[alert]["expr"])
        by = [l.strip() for l in m.group(1).split(",")] if m else []
        if "job" not in by or len(by) < 2:
            errors.append("%s groups by %s: not per pair (job and a per-database label)" % (alert, by))
            continue
        identity = {}
        for w, _ in workloads:
            pod_labels = {re.sub(r"[^a-zA-Z0-9_]", "_", k): v
                          for k, v in w["spec"]["template"]["metadata"]["labels"].items()}
            values = []
            for label in by:
                if label in ("job", "namespace"):  # jobLabel; the release's namespace
                    continue
                if label in OPERATOR_LABELS:
                    errors.append("%s groups by %s, which differs between a pair's pods" % (alert, label))
                    continue
                sources = relabel.get(label)
                if not sources:
                    errors.append("%s groups by %s, which the ServiceMonitor does not set" % (alert, label))
                    continue
                for src in sources:
                    key = src[len("__meta_kubernetes_pod_label_"):]
                    if not src.startswith("__meta_kubernetes_pod_label_") or not pod_labels.get(key):
                        errors.append("%s/%s: the ServiceMonitor's %s comes from %s, which its pods lack"
                                      % (w["kind"], w["metadata"]["name"], label, src))
                values.append(tuple(pod_labels.get(src[len("__meta_kubernetes_pod_label_"):])
                                    for src in sources))
            name = "%s/%s" % (w["kind"], w["metadata"]["name"])
            other = identity.setdefault(tuple(values), name)
            if other != name:
                errors.append("%s: %s counts the pods of %s and %s as one pair (%s)"
                              % (alert, rules[alert]["expr"], other, name, values))
    return errors


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def pod_specs(docs):
    for d in docs:
        if d["kind"] in ("Deployment", "StatefulSet"):
            yield d, d["spec"]["template"]["spec"]


def installed_programs(repo):
    """The paths the image's programs have: the package (cpack, prefix
    CPACK_PACKAGING_INSTALL_PREFIX) installs cmake/install.cmake's
    `install(TARGETS ...)` to <prefix>/bin, and the Dockerfile installs
    that package. Its ENTRYPOINT must be one of them too."""
    with open(os.path.join(repo, "cmake/install.cmake")) as f:
        install = f.read()
    prefix = re.search(r"set\(CPACK_PACKAGING_INSTALL_PREFIX (\S+)\)", install).group(1)
    targets = re.search(r"install\(TARGETS ([^)]*?)\s+RUNTIME DESTINATION \$\{CMAKE_INSTALL_BINDIR\}",
                        install).group(1).split()
    programs = {"%s/bin/%s" % (prefix, t) for t in targets}
    with open(os.path.join(repo, "docker/Dockerfile")) as f:
        dockerfile = f.read()
    if not re.search(r"apt-get install[^&]*/tmp/outbox-relay\.deb", dockerfile):
        raise SystemExit("docker/Dockerfile no longer installs the package: update installed_programs()")
    entry = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", dockerfile, re.M).group(1))[0]
    if entry not in programs:
        raise SystemExit("docker/Dockerfile's ENTRYPOINT %s is none of the installed %s"
                         % (entry, sorted(programs)))
    return programs


def check_config(tools, text):
    """The relay's own parser over a rendered config: `outbox-relay status`
    exits 2 on a bad config, before it connects (here to a closed port, so
    it then fails with 1). Every ${VAR} gets a dummy value."""
    env = dict(os.environ)
    for m in VAR_RE.finditer(text):
        if m.group(1):
            env[m.group(1)] = "dummy"
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
        f.write(text)
        f.flush()
        r = tools.run([tools.relay, "status", "--config", f.name, "--set",
                       "postgres.conninfo=host=127.0.0.1 port=1 dbname=x connect_timeout=1"],
                      env=env, timeout=60)
    err = (r.stdout + r.stderr).strip()
    if r.returncode != 2:
        return []
    return ["outbox-relay refuses the rendered config: " + err.splitlines()[-1]]


def runbook_bases(groups):
    """The parts before '#' of the groups' runbook_urls."""
    return {r["annotations"]["runbook_url"].split("#", 1)[0]
            for g in groups for r in g["rules"] if "runbook_url" in r.get("annotations", {})}


def with_runbook_base(groups, base):
    """The groups with each runbook_url's part before '#' replaced by base."""
    groups = copy.deepcopy(groups)
    for g in groups:
        for r in g["rules"]:
            url = r.get("annotations", {}).get("runbook_url")
            if url is not None:
                r["annotations"]["runbook_url"] = base + "#" + url.split("#", 1)[-1]
    return groups


def check_rules(tools, repo, groups):
    """promtool over the rendered groups, plus the shipped unit tests (their
    runbook_urls moved to the render's prometheusRule.runbookBaseUrl)."""
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        rules = os.path.join(tmp, "outbox-relay.rules.yml")
        with open(rules, "w") as f:
            yaml.safe_dump({"groups": groups}, f, sort_keys=False)
        r = tools.run([tools.promtool, "check", "rules", rules])
        if r.returncode != 0:
            errors.append("promtool check rules on the rendered PrometheusRule: "
                          + (r.stdout + r.stderr).strip())
            return errors
        with open(os.path.join(repo, RULES)) as f:
            (shipped_base,) = runbook_bases(yaml.safe_load(f)["groups"])
        with open(os.path.join(repo, RULES_TEST)) as f:
            test = f.read()
        for base in sorted(runbook_bases(groups))[:1]:
            test = test.replace(shipped_base + "#", base + "#")
        with open(os.path.join(tmp, os.path.basename(RULES_TEST)), "w") as f:
            f.write(test)
        r = tools.run([tools.promtool, "test", "rules",
                       os.path.basename(RULES_TEST)], cwd=tmp)
        if r.returncode != 0:
            errors.append("promtool test rules on the rendered PrometheusRule: "
                          + (r.stdout + r.stderr).strip()[-2000:])
    return errors


def validate(tools, repo, docs):
    """Every check of one render; returns a list of error lines."""
    errors = []
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    names = lambda kind: {d["metadata"]["name"]: d for d in by_kind.get(kind, [])}

    # Every command a pod runs is a program the image installs.
    programs = installed_programs(repo)
    for w, pod in pod_specs(docs):
        for c in pod.get("initContainers", []) + pod["containers"]:
            path = (c.get("command") or [None])[0]
            if path not in programs:
                errors.append("%s/%s: container %s runs %s, which the image (docker/Dockerfile's "
                              "package) does not install; it has %s"
                              % (w["kind"], w["metadata"]["name"], c["name"], path,
                                 ", ".join(sorted(programs))))

    for d in docs:
        what = "%s/%s" % (d.get("kind"), d.get("metadata", {}).get("name"))
        if d.get("kind") == "ServiceMonitor":
            schema = SERVICE_MONITOR_SCHEMA
        elif d.get("kind") == "PrometheusRule":
            schema = PROMETHEUS_RULE_SCHEMA
        else:
            schema = None
        try:
            if schema:
                jsonschema.Draft202012Validator(schema).validate(d)
            else:
                v = kubernetes_validate.validate(d, KUBERNETES_VERSION, strict=True)
                if v != KUBERNETES_VERSION.rsplit(".", 1)[0]:
                    errors.append("%s validated against %s, not %s" % (what, v, KUBERNETES_VERSION))
        except jsonschema.ValidationError as e:
            errors.append("%s: %s: %s" % (what, ".".join(map(str, e.path)), e.message))
        except kubernetes_validate.SchemaNotFoundError as e:
            errors.append("%s: no Kubernetes %s schema: %s" % (what, KUBERNETES_VERSION, e.message))

    configmaps, secrets, services = names("ConfigMap"), names("Secret"), by_kind.get("Service", [])
    marker_ids = {}  # postgres.slot_marker_id -> the workload that has it
    for w, pod in pod_specs(docs):
        what = "%s/%s" % (w["kind"], w["metadata"]["name"])
        labels = w["spec"]["template"]["metadata"]["labels"]
        if not matches(w["spec"]["selector"]["matchLabels"], labels):
            errors.append("%s: selector does not match its pod labels" % what)
        if not any(matches(s["spec"]["selector"], labels) for s in services):
            errors.append("%s: no Service selects its pods" % what)
        if not any(matches(p["spec"]["selector"]["matchLabels"], labels)
                   for p in by_kind.get("PodDisruptionBudget", [])):
            errors.append("%s: no PodDisruptionBudget covers its pods" % what)
        psc = pod.get("securityContext", {})
        if psc.get("runAsUser") != 10001 or not psc.get("runAsNonRoot"):
            errors.append("%s: pods must run as non-root uid 10001" % what)
        (c,) = pod["containers"]
        sc = c.get("securityContext", {})
        if not (sc.get("readOnlyRootFilesystem") and sc.get("capabilities", {}).get("drop") == ["ALL"]
                and sc.get("allowPrivilegeEscalation") is False):
            errors.append("%s: container needs readOnlyRootFilesystem, drop ALL, no privilege escalation" % what)
        quantities = [("resources.%s.%s" % (k, r), q)
                      for k, m in c.get("resources", {}).items() for r, q in m.items()]
        quantities += [("volumes.%s.emptyDir.sizeLimit" % v["name"], v["emptyDir"]["sizeLimit"])
                       for v in pod.get("volumes", []) if "sizeLimit" in v.get("emptyDir", {})]
        quantities += [("volumeClaimTemplates.%s" % t["metadata"]["name"], t["spec"]["resources"]["requests"]["storage"])
                       for t in w["spec"].get("volumeClaimTemplates", [])]
        for where, q in quantities:
            if not QUANTITY_RE.match(str(q)):
                errors.append("%s: %s %r is not a Kubernetes quantity" % (what, where, q))
        ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
        for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
            get = c.get(probe, {}).get("httpGet", {})
            if get.get("path") != path or get.get("port") not in ports:
                errors.append("%s: %s must GET %s on a declared port" % (what, probe, path))
        # The relay configuration the pod mounts.
        (cfg_vol,) = [v for v in pod["volumes"] if v["name"] == "config"]
        cm = configmaps.get(cfg_vol["configMap"]["name"])
        if cm is None:
            errors.append("%s: mounts ConfigMap %s, not rendered" % (what, cfg_vol["configMap"]["name"]))
            continue
        text = cm["data"]["relay.yaml"]
        cfg = yaml.safe_load(text)
        errors += ["%s: %s" % (what, e) for e in check_config(tools, text)]
        listen = cfg.get("http", {}).get("listen", "")
        if listen != "0.0.0.0:%d" % ports.get("http", -1):
            errors.append("%s: http.listen %r is not 0.0.0.0:<the http port>" % (what, listen))
        flush_s = cfg.get("kafka", {}).get("flush_timeout_ms", 30000) / 1000
        if not pod.get("terminationGracePeriodSeconds", 30) > flush_s:
            errors.append("%s: terminationGracePeriodSeconds %s is not above kafka.flush_timeout_ms (%s s)"
                          % (what, pod.get("terminationGracePeriodSeconds"), flush_s))
        if "outbox-relay" in c["command"][0] and w["kind"] == "Deployment" \
                and cfg.get("postgres", {}).get("slot_marker") != "kafka":
            errors.append("%s: a stateless relay needs postgres.slot_marker kafka" % what)
        if "outbox-relay" in c["command"][0]:
            # Issue 32: the key of the relay's slot marker in the state topic.
            marker_id = cfg.get("postgres", {}).get("slot_marker_id")
            if not marker_id:
                errors.append("%s: no postgres.slot_marker_id" % what)
            elif marker_id in marker_ids:
                errors.append("%s: postgres.slot_marker_id %r is %s's too"
                              % (what, marker_id, marker_ids[marker_id]))
            else:
                marker_ids[marker_id] = what
        # Every ${VAR} must come from the pod's env or a Secret of its envFrom.
        provided, external = {e["name"] for e in c.get("env", [])}, False
        for src in c.get("envFrom", []):
            s = secrets.get(src.get("secretRef", {}).get("name"))
            if s is None:
                external = True  # a Secret outside the release: keys unknown
            else:
                provided |= set(s.get("stringData", {})) | set(s.get("data", {}))
        for m in VAR_RE.finditer(text):
            var, default = m.group(1), m.group(2)
            if var and default is None and var not in provided and not external:
                errors.append("%s: the config names ${%s}, which no env entry or Secret provides"
                              % (what, var))

    for sm in by_kind.get("ServiceMonitor", []):
        sel = sm["spec"]["selector"]["matchLabels"]
        chosen = [s for s in services if matches(sel, s["metadata"]["labels"])]
        if not chosen:
            errors.append("ServiceMonitor selects no Service")
        for s in chosen:
            if sm["spec"]["endpoints"][0]["port"] not in [p["name"] for p in s["spec"]["ports"]]:
                errors.append("ServiceMonitor port is not a port of Service %s" % s["metadata"]["name"])
            if s["metadata"]["labels"].get(sm["spec"]["jobLabel"]) != "outbox-relay":
                errors.append("Service %s: job label is not outbox-relay, the job the rules expect"
                              % s["metadata"]["name"])

    with open(os.path.join(repo, RULES)) as f:
        shipped = yaml.safe_load(f)["groups"]
    for rule in by_kind.get("PrometheusRule", []):
        # Issue 33: every runbook_url is prometheusRule.runbookBaseUrl (one
        # absolute URL) + the shipped anchor; nothing else differs.
        bases = sorted(runbook_bases(rule["spec"]["groups"]))
        if len(bases) != 1 or not re.match(r"^https?://[^#\s]+$", bases[0]):
            errors.append("PrometheusRule runbook_urls start with %s, not one absolute URL" % bases)
        elif rule["spec"]["groups"] != with_runbook_base(shipped, bases[0]):
            errors.append("PrometheusRule groups differ from %s" % RULES)
        errors += check_rules(tools, repo, rule["spec"]["groups"])
        errors += check_pair_labels(docs, rule["spec"]["groups"])

    with open(os.path.join(repo, DASHBOARD)) as f:
        dashboard = json.load(f)
    for cm in by_kind.get("ConfigMap", []):
        if "outbox-relay.json" not in cm.get("data", {}):
            continue
        if cm["metadata"]["labels"].get("grafana_dashboard") != "1":
            errors.append("dashboard ConfigMap lacks the grafana_dashboard label")
        rendered = json.loads(cm["data"]["outbox-relay.json"])
        expected = json.loads(json.dumps(dashboard).replace(
            '"uid": "outbox-prometheus"', '"uid": "prometheus"'))
        if rendered != expected:
            errors.append("dashboard ConfigMap differs from %s" % DASHBOARD)
    return errors


def check_expectations(name, docs, exp):
    errors = []
    workloads = {d["metadata"]["name"]: (d["kind"], d["spec"]["replicas"])
                 for d in docs if d["kind"] in ("Deployment", "StatefulSet")}
    if workloads != exp["workloads"]:
        errors.append("workloads %s, expected %s" % (workloads, exp["workloads"]))
    has_rule = any(d["kind"] == "PrometheusRule" for d in docs)
    if has_rule != exp["rule"]:
        errors.append("PrometheusRule rendered: %s, expected %s" % (has_rule, exp["rule"]))
    for _, pod in pod_specs(docs):
        if "grace" in exp and pod["terminationGracePeriodSeconds"] != exp["grace"]:
            errors.append("grace period %s, expected %s" % (pod["terminationGracePeriodSeconds"], exp["grace"]))
        if "command" in exp and pod["containers"][0]["command"] != [exp["command"]]:
            errors.append("command %s, expected %s" % (pod["containers"][0]["command"], exp["command"]))
        container = pod["containers"][0]
        if "volume" in exp:
            name, path = exp["volume"]
            if (name not in [v["name"] for v in pod["volumes"]] or
                    {"name": name, "mountPath": path, "readOnly": True}
                    not in container["volumeMounts"]):
                errors.append("volume %s not mounted at %s" % (name, path))
        # The validate init container sees what the daemon reads: with a
        # state volume (the file slot marker), that volume too.
        for init in pod.get("initContainers", []):
            for m in container["volumeMounts"]:
                if m not in init["volumeMounts"]:
                    errors.append("init container %s lacks the mount %s" % (init["name"], m))
        if "env" in exp and exp["env"] not in [e["name"] for e in container.get("env", [])]:
            errors.append("no environment variable %s" % exp["env"])
    if exp.get("secret") and not any(d["kind"] == "Secret" for d in docs):
        errors.append("no Secret rendered")
    if not any(d["kind"] == "ServiceMonitor" for d in docs):
        errors.append("no ServiceMonitor rendered")
    return errors


def copy_tree(repo, dest):
    """The chart and the docker/ files it links to, same layout."""
    for rel in (CHART, "docker/prometheus", "docker/grafana/dashboards"):
        shutil.copytree(os.path.join(repo, rel), os.path.join(dest, rel), symlinks=True)
    for rel in ("cmake/install.cmake", "docker/Dockerfile"):  # installed_programs()
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copy(os.path.join(repo, rel), os.path.join(dest, rel))
    return os.path.join(dest, CHART)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", required=True)
    ap.add_argument("--promtool", required=True)
    ap.add_argument("--repo", required=True)
    ap.add_argument("--relay", required=True, help="the outbox-relay binary")
    a = ap.parse_args()
    repo = os.path.abspath(a.repo)
    tools = Tools(a.helm, a.promtool, repo, a.relay)
    chart = os.path.join(repo, CHART)
    here = os.path.join(repo, "tests/helm")
    failures = []
    started = time.monotonic()

    def fail(msg):
        failures.append(msg)
        print("FAIL " + msg)

    # 1. Valid values: lint, render, validate, expectations.
    scenarios = [("default", None)] + [
        (n, os.path.join(here, "values", n))
        for n in sorted(os.listdir(os.path.join(here, "values")))]
    for name, values in scenarios:
        if name not in EXPECT:
            fail("%s: no expectations in chart_test.py" % name)
            continue
        ok, out = tools.lint(chart, values)
        if not ok:
            fail("%s: helm lint --strict:\n%s" % (name, out))
        docs, err = tools.template(chart, values)
        if docs is None:
            fail("%s: helm template: %s" % (name, err))
            continue
        errs = validate(tools, repo, docs) + check_expectations(name, docs, EXPECT[name])
        for e in errs:
            fail("%s: %s" % (name, e))
        if not errs:
            kinds = sorted("%s/%s" % (d["kind"], d["metadata"]["name"]) for d in docs)
            print("ok   %s: %d objects valid (Kubernetes %s strict, CRDs checked): %s"
                  % (name, len(docs), KUBERNETES_VERSION, ", ".join(kinds)))

    # 2. Invalid values: each must fail, with the text its `# expect:` names.
    invalid_dir = os.path.join(here, "invalid")
    for name in sorted(os.listdir(invalid_dir)):
        path = os.path.join(invalid_dir, name)
        with open(path) as f:
            m = re.search(r"^# expect: (.+)$", f.read(), re.M)
        expect = m.group(1).strip() if m else "?"
        docs, err = tools.template(chart, path)
        errs = [err] if docs is None else validate(tools, repo, docs)
        hit = [e for e in errs if expect in e]
        if hit:
            line = [l for l in hit[0].splitlines() if expect in l][0]
            print("ok   invalid/%s refused: %s" % (name, line.strip()[:240]))
        else:
            fail("invalid/%s was not refused with %r (errors: %s)" % (name, expect, errs))

    # 3. One source: the rendered PrometheusRule follows the docker rules
    #    file (through the chart's link), in `helm template` and `helm
    #    package`; a broken rule there fails the suite.
    with tempfile.TemporaryDirectory() as tmp:
        copy_chart = copy_tree(repo, tmp)
        rules_copy = os.path.join(tmp, RULES)
        with open(rules_copy) as f:
            rules = yaml.safe_load(f)
        added = copy.deepcopy(rules)
        added["groups"][-1]["rules"].append(
            {"alert": "OutboxRelayChartLinkProbe", "expr": "vector(1) == 0",
             "labels": {"severity": "warning"}})
        with open(rules_copy, "w") as f:
            yaml.safe_dump(added, f, sort_keys=False)
        docs, err = tools.template(copy_chart, None)
        (rule,) = [d for d in docs or [] if d["kind"] == "PrometheusRule"] or [None]
        if rule is None or rule["spec"]["groups"] != added["groups"]:
            fail("a rule added to docker/prometheus does not reach the render (%s)" % err)
        else:
            print("ok   an alert added to %s appears in the rendered PrometheusRule" % RULES)
        r = tools.run([tools.helm, "package", copy_chart, "-d", tmp])
        pkg = os.path.join(tmp, "outbox-relay-0.1.0.tgz")
        if r.returncode != 0 or not os.path.exists(pkg):
            fail("helm package: %s" % (r.stdout + r.stderr))
        else:
            with tarfile.open(pkg) as t:
                member = t.getmember("outbox-relay/files/outbox-relay.rules.yml")
                packaged = yaml.safe_load(t.extractfile(member))
            if member.issym() or packaged != added:
                fail("helm package did not follow the link to the rules file")
            else:
                print("ok   helm package stores the linked rules file's content")
        broken = copy.deepcopy(rules)
        broken["groups"][-1]["rules"].append(
            {"alert": "OutboxRelayBroken", "expr": "outbox_relay_ready ==", "for": "1m"})
        with open(rules_copy, "w") as f:
            yaml.safe_dump(broken, f, sort_keys=False)
        docs, err = tools.template(copy_chart, None)
        errs = [err] if docs is None else validate(tools, tmp, docs)
        if any("promtool check rules" in e for e in errs):
            print("ok   a broken rule in %s fails promtool on the render" % RULES)
        else:
            fail("a broken rule in docker/prometheus was not refused (errors: %s)" % errs)

    # 4. runbook_url (issue 33): the default values keep the rules file's
    #    links; tests/helm/values/databases.yaml's prometheusRule.runbookBaseUrl
    #    replaces the part before '#' of every one.
    with open(os.path.join(repo, RULES)) as f:
        shipped = yaml.safe_load(f)["groups"]
    for name, values in (("default", None), ("databases.yaml", os.path.join(here, "values", "databases.yaml"))):
        want = runbook_bases(shipped)
        if values:
            with open(values) as f:
                want = {yaml.safe_load(f)["prometheusRule"]["runbookBaseUrl"]}
        docs, err = tools.template(chart, values)
        (rule,) = [d for d in docs or [] if d["kind"] == "PrometheusRule"] or [None]
        got = runbook_bases(rule["spec"]["groups"]) if rule else err
        if got != want or len(want) != 1:
            fail("%s: runbook_urls start with %s, expected %s" % (name, got, want))
        else:
            print("ok   %s: every runbook_url is %s#<anchor>" % (name, list(want)[0]))

    for note in sorted(tools.notes):
        print("note " + note)
    print("%d failure(s), %.1f s" % (len(failures), time.monotonic() - started))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
