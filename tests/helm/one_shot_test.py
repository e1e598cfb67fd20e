#!/usr/bin/env python3
"""The one-shot Pods of docs/operations/kubernetes.md, offline (ctest
one_shot_test).

The page defines `one_shot POD ARGV` (its block opening with
`# one-shot: define`): a Pod made from a database's pod template with the
program and arguments replaced. This renders the chart (the default
values: a Deployment; tests/helm/values/statefulset.yaml: a StatefulSet,
scaled to 0 as a relay run leaves it, and not), runs the page's block as
printed with `kubectl` answering from the render (its `get ... -o name`
and `-o json`, and `apply -f -` capturing the Pod), then checks the Pod:
  * valid against the Kubernetes schemas (kubernetes-validate, strict,
    chart_test's version);
  * the pod template kept (image, env, envFrom, volume mounts, security
    contexts, grace period, service account) but for: the program and
    arguments (ARGV), no probes, restartPolicy Never, and none of the
    workload's labels (no ReplicaSet adopts it, no Service selects it);
  * every volume mount has a volume: a StatefulSet's state volume is pod
    0's claim when scaled to 0, an emptyDir otherwise.
And every ARGV='[...]' the runbooks print (docs/operations/*.md) is a JSON
array whose program the image installs (chart_test.installed_programs)
and which reads the chart's configuration file. The other blocks of the
section (`relay`, `relay-end`, `command`) must be valid shell.

Usage: one_shot_test.py --helm HELM --repo ROOT
Run with the Python of the venv setup.sh makes (kubernetes-validate).
"""
import argparse
import copy
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import jsonschema
import kubernetes_validate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chart_test  # noqa: E402  (KUBERNETES_VERSION, installed_programs)

PAGE = "docs/operations/kubernetes.md"
CONFIG = "/etc/outbox-relay/relay.yaml"
ARGV = ["/usr/bin/outbox-relay", "--config", CONFIG,
        "--set", "outbox.on_invalid=dead_letter"]
# kubectl, answered from the render: the page's block runs unchanged.
KUBECTL = r'''
kubectl() {
  case " $* " in
    *" get deployment,statefulset -o name "*) echo "$WORKLOAD_NAME" ;;
    *" get "*" -o json "*) cat "$WORKLOAD_JSON" ;;
    *" apply -f - "*) cat >"$POD_OUT" ;;
    *) echo "unexpected kubectl $*" >&2; return 1 ;;
  esac
}
'''


def blocks(text):
    return {m.group(1): m.group(2) for m in re.finditer(
        r"^```sh\n# one-shot: ([\w-]+)\n(.*?)^```$", text, re.S | re.M)}


def render(helm, repo, values):
    """The Deployments and StatefulSets chart_test's `helm template` renders."""
    docs, err = chart_test.Tools(helm, None, repo, None).template(
        os.path.join(repo, chart_test.CHART),
        os.path.join(repo, values) if values else None)
    if docs is None:
        raise SystemExit("helm template failed: %s" % err)
    return [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")]


def one_shot(define, workload, pod, argv):
    """Runs the page's block, then `one_shot POD ARGV`: the Pod applied."""
    with tempfile.TemporaryDirectory() as tmp:
        wl = os.path.join(tmp, "workload.json")
        with open(wl, "w") as f:
            json.dump(workload, f)
        out = os.path.join(tmp, "pod.json")
        script = (KUBECTL + define + "\none_shot \"$1\" \"$2\"\n")
        env = dict(os.environ, WORKLOAD_JSON=wl, POD_OUT=out,
                   WORKLOAD_NAME="%s/%s" % (workload["kind"].lower(),
                                            workload["metadata"]["name"]))
        subprocess.run(["bash", "-euo", "pipefail", "-c", script, "one_shot",
                        pod, json.dumps(argv)], check=True, env=env)
        with open(out) as f:
            return json.load(f)


def check_pod(what, workload, pod, argv, errors):
    try:
        kubernetes_validate.validate(pod, chart_test.KUBERNETES_VERSION, strict=True)
    except jsonschema.ValidationError as e:
        errors.append("%s: %s: %s" % (what, ".".join(map(str, e.path)), e.message))
    tmpl = workload["spec"]["template"]["spec"]
    spec = pod["spec"]
    if pod["kind"] != "Pod" or spec.get("restartPolicy") != "Never":
        errors.append("%s: not a Pod that runs once" % what)
    selector = workload["spec"]["selector"]["matchLabels"]
    labels = pod["metadata"].get("labels", {})
    if all(labels.get(k) == v for k, v in selector.items()):
        errors.append("%s: carries the workload's selector labels" % what)
    c, t = spec["containers"][0], tmpl["containers"][0]
    if [*c.get("command", []), *c.get("args", [])] != argv:
        errors.append("%s: runs %s, not %s" % (what, c.get("command"), argv))
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if probe in c:
            errors.append("%s: keeps the %s" % (what, probe))
    for key in ("image", "env", "envFrom", "volumeMounts", "securityContext",
                "resources", "ports"):
        if c.get(key) != t.get(key):
            errors.append("%s: container %s differs from the template's" % (what, key))
    for key in ("securityContext", "serviceAccountName", "imagePullSecrets",
                "terminationGracePeriodSeconds", "automountServiceAccountToken"):
        if spec.get(key) != tmpl.get(key):
            errors.append("%s: pod %s differs from the template's" % (what, key))
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        if m["name"] not in volumes:
            errors.append("%s: mount %s has no volume" % (what, m["name"]))
    for v in tmpl.get("volumes", []):
        if volumes.get(v["name"]) != v:
            errors.append("%s: volume %s differs from the template's" % (what, v["name"]))
    return volumes


def runbook_argvs(repo):
    """Every ARGV='[...]' of docs/operations/*.md, as (file, text)."""
    out = []
    for path in sorted(glob.glob(os.path.join(repo, "docs/operations/*.md"))):
        with open(path, encoding="utf-8") as f:
            text = re.sub(r"\s+", " ", f.read())
        out += [(os.path.relpath(path, repo), m.group(1))
                for m in re.finditer(r"ARGV='(\[[^']*\])'", text)]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--helm", required=True)
    ap.add_argument("--repo", required=True)
    args = ap.parse_args()
    with open(os.path.join(args.repo, PAGE), encoding="utf-8") as f:
        found = blocks(f.read())
    errors = []
    for name in ("define", "relay", "relay-end", "command"):
        if name not in found:
            errors.append("%s: no block opening with '# one-shot: %s'" % (PAGE, name))
            continue
        r = subprocess.run(["bash", "-n"], input=found[name], text=True,
                           capture_output=True)
        if r.returncode:
            errors.append("%s block: not valid shell: %s" % (name, r.stderr.strip()))
    pods = 0
    if "define" in found:
        cases = []
        for w in render(args.helm, args.repo, None):
            cases.append(("default " + w["kind"], w, None))
        for w in render(args.helm, args.repo, "tests/helm/values/statefulset.yaml"):
            scaled = copy.deepcopy(w)
            scaled["spec"]["replicas"] = 0
            cases.append(("StatefulSet scaled to 0", scaled, "claim"))
            cases.append(("StatefulSet running", w, "emptyDir"))
        for what, w, state in cases:
            pod = one_shot(found["define"], w, "app-once", ARGV)
            pods += 1
            volumes = check_pod(what, w, pod, ARGV, errors)
            for claim in w["spec"].get("volumeClaimTemplates", []):
                v = volumes.get(claim["metadata"]["name"], {})
                want = ({"persistentVolumeClaim": {"claimName": "%s-%s-0" % (
                    claim["metadata"]["name"], w["metadata"]["name"])}}
                    if state == "claim" else {"emptyDir": {}})
                want["name"] = claim["metadata"]["name"]
                if v != want:
                    errors.append("%s: state volume %s, not %s" % (what, v, want))
        if not any(w["kind"] == "StatefulSet" for _, w, _ in cases):
            errors.append("no StatefulSet rendered from statefulset.yaml")
    programs = chart_test.installed_programs(args.repo)
    argvs = runbook_argvs(args.repo)
    for path, text in argvs:
        try:
            argv = json.loads(text)
        except json.JSONDecodeError as e:
            errors.append("%s: ARGV %s is not JSON: %s" % (path, text, e))
            continue
        if argv[0] not in programs:
            errors.append("%s: ARGV %s runs %s, which the image does not install"
                          % (path, text, argv[0]))
        if CONFIG not in argv or argv[argv.index(CONFIG) - 1] != "--config":
            errors.append("%s: ARGV %s does not read --config %s" % (path, text, CONFIG))
    if len(argvs) < 5:
        errors.append("only %d ARGV in docs/operations: the runbooks lost their "
                      "Kubernetes forms" % len(argvs))
    for e in errors:
        print(e)
    print("%d one-shot Pods, %d runbook ARGVs checked: %s"
          % (pods, len(argvs), "ok" if not errors else "%d problems" % len(errors)))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
