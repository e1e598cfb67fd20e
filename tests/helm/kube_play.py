"""What kube_play_test.sh needs from a rendered chart (helm template output).

  kube_play.py play SUFFIX [SECRET_DIR] <rendered >played
      The objects podman kube play runs (the workloads, the ConfigMaps they
      mount, the Secrets), changed only where podman 4.3 on one host
      differs from a cluster (kube_play_test.sh's header says why):
      workload and ConfigMap names get SUFFIX (one played copy per
      replica), replicas 1, hostNetwork, no containerPort (named probe
      ports resolved to their number first, as a kubelet does), emptyDir
      volumes named after the workload (podman shares a name), and no
      Secret (see secrets). With SECRET_DIR, a Secret volume is a hostPath
      of SECRET_DIR/<secretName> (podman 4.3.1's kube play crashes on
      Secret volumes: nil pointer in VolumeFromSecret).
      A Pod is played as a workload is (kube_play_test.sh oneshot).
      A StatefulSet is played as a Deployment (podman 4.3 plays no
      StatefulSet) whose pod mounts the claim its volumeClaimTemplates give
      that pod, <template>-<played name> (a named podman volume the test
      provisions: kube_play.py claims), as the StatefulSet controller
      gives pod N the claim <template>-<name>-N for good.
  kube_play.py one-shot POD_JSON <rendered >objects
      The rendered objects with the one-shot Pod POD_JSON (what the docs'
      one_shot function applies) in place of the workloads: the Pod runs
      beside nothing, with the ConfigMaps and Secrets it refers to.
  kube_play.py select KINDS SELECTOR <rendered
      What `kubectl get KINDS -o name -l SELECTOR` answers from the
      render: kind/name of each object of KINDS (comma-separated, lower
      case) whose labels match SELECTOR (k=v,...).
  kube_play.py get KIND/NAME <rendered
      That object as JSON (`kubectl get KIND/NAME -o json`).
  kube_play.py doc-block NAME <page
      The page's shell block opening with `# one-shot: NAME`, as
      one_shot_test.py extracts it.
  kube_play.py runbook-argv PATTERN REPO
      The first ARGV='[...]' of REPO/docs/operations/*.md containing
      PATTERN, as one_shot_test.py finds them.
  kube_play.py secret-volumes <rendered
      One line per Secret volume: its secretName and defaultMode (octal).
  kube_play.py secrets <rendered
      One line per Secret: its name and its keys as podman 4.3's envFrom
      reads a podman secret (a JSON object of base64 values; a Secret
      that kube play stores itself is YAML, which envFrom then refuses:
      "not valid JSON").
  kube_play.py probes <rendered
      One line per container probe: CONTAINER KIND PATH PORT PERIOD
      TIMEOUT FAILURES INITIAL_DELAY (the port resolved by name).
  kube_play.py grace <rendered
      terminationGracePeriodSeconds of the (first) workload.
  kube_play.py claims <played
      The claim names the played pods mount (persistentVolumeClaim), one
      per line.
  kube_play.py names KIND <played
      The names of the objects of KIND.
  kube_play.py commands FILE...
      The executables every container of every workload runs (init
      containers too): command[0], or "-" for the image's ENTRYPOINT.
"""

import base64
import json
import sys

import yaml

WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "Pod")


def load(stream):
    return [d for d in yaml.safe_load_all(stream) if d]


def pod_spec(doc):
    """The pod spec of a workload, or of a Pod (a one-shot Pod)."""
    return doc["spec"] if doc["kind"] == "Pod" else doc["spec"]["template"]["spec"]


def containers(spec):
    return spec.get("initContainers", []) + spec.get("containers", [])


def resolve_port(container, port):
    """A probe's port as a number: a name is looked up in the container's
    ports, as the kubelet does; an unknown name is an error."""
    if isinstance(port, int):
        return port
    for p in container.get("ports", []):
        if p.get("name") == port:
            return p["containerPort"]
    raise SystemExit(f"probe port {port!r} names no port of container {container['name']}")


def probes(container):
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = container.get(kind)
        if probe:
            yield kind, probe


def play(suffix, secret_dir, docs):
    workloads = [d for d in docs if d["kind"] in WORKLOADS]
    mounted = set()
    for w in workloads:
        spec = pod_spec(w)
        for v in spec.get("volumes", []):
            if "secret" in v and secret_dir:
                name = v.pop("secret")["secretName"]
                v["hostPath"] = {"path": f"{secret_dir}/{name}", "type": "Directory"}
            if "configMap" in v:
                mounted.add(v["configMap"]["name"])
                v["configMap"]["name"] += suffix
    out = []
    for d in docs:
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] in mounted:
            d["metadata"]["name"] += suffix
            out.append(d)
    for w in workloads:
        w["metadata"]["name"] += suffix
        if w["kind"] != "Pod":
            w["spec"]["replicas"] = 1
        if w["kind"] == "StatefulSet":
            w["kind"] = "Deployment"
            for key in ("serviceName", "podManagementPolicy"):
                w["spec"].pop(key, None)
            for t in w["spec"].pop("volumeClaimTemplates", []):
                claim = f"{t['metadata']['name']}-{w['metadata']['name']}"
                pod_spec(w).setdefault("volumes", []).append(
                    {"name": t["metadata"]["name"],
                     "persistentVolumeClaim": {"claimName": claim}})
        spec = pod_spec(w)
        spec["hostNetwork"] = True
        if spec.get("initContainers"):
            # podman 4.3 plays init containers as "once" and removes each
            # after its run, racing the container's own exit ("cannot
            # remove container ... as it is running"); "always" keeps it,
            # and its log, as a kubelet keeps an init container's.
            # (podman reads a Deployment's own annotations, not its pod
            # template's: both get it.)
            metas = [w["metadata"]]
            if w["kind"] != "Pod":
                metas.append(w["spec"]["template"]["metadata"])
            for meta in metas:
                meta.setdefault("annotations", {})[
                    "io.podman.annotations.init.container.type"] = "always"
        # podman makes an emptyDir a named volume of the volume's name,
        # shared by every pod that names it the same: one per played pod.
        renamed = {}
        for v in spec.get("volumes", []):
            if "emptyDir" in v:
                new = f"{w['metadata']['name']}-{v['name']}"
                renamed[v["name"]] = new
                v["name"] = new
        for c in containers(spec):
            for m in c.get("volumeMounts", []):
                m["name"] = renamed.get(m["name"], m["name"])
            for _, probe in probes(c):
                if "httpGet" in probe:
                    probe["httpGet"]["port"] = resolve_port(c, probe["httpGet"]["port"])
            c.pop("ports", None)
        out.append(w)
    yaml.safe_dump_all(out, sys.stdout, sort_keys=False)


def main():
    cmd = sys.argv[1]
    if cmd == "play":
        play(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None, load(sys.stdin))
    elif cmd == "one-shot":
        with open(sys.argv[2]) as f:
            pod = json.load(f)
        docs = [d for d in load(sys.stdin) if d["kind"] not in WORKLOADS]
        yaml.safe_dump_all(docs + [pod], sys.stdout, sort_keys=False)
    elif cmd == "select":
        kinds = sys.argv[2].split(",")
        want = dict(kv.split("=", 1) for kv in sys.argv[3].split(","))
        for d in load(sys.stdin):
            labels = d["metadata"].get("labels") or {}
            if d["kind"].lower() in kinds and all(labels.get(k) == v for k, v in want.items()):
                print("%s/%s" % (d["kind"].lower(), d["metadata"]["name"]))
    elif cmd == "get":
        kind, name = sys.argv[2].split("/", 1)
        docs = [d for d in load(sys.stdin)
                if d["kind"].lower() == kind and d["metadata"]["name"] == name]
        if len(docs) != 1:
            raise SystemExit(f"{sys.argv[2]}: {len(docs)} objects in the render")
        json.dump(docs[0], sys.stdout)
    elif cmd == "doc-block":
        import one_shot_test  # the page's blocks, extracted as its test does
        found = one_shot_test.blocks(sys.stdin.read())
        if sys.argv[2] not in found:
            raise SystemExit(f"no block opening with '# one-shot: {sys.argv[2]}'")
        sys.stdout.write(found[sys.argv[2]])
    elif cmd == "runbook-argv":
        import one_shot_test
        argvs = [a for _, a in one_shot_test.runbook_argvs(sys.argv[3]) if sys.argv[2] in a]
        if not argvs:
            raise SystemExit(f"no ARGV containing {sys.argv[2]!r} in docs/operations")
        print(argvs[0])
    elif cmd == "secret-volumes":
        for w in (d for d in load(sys.stdin) if d["kind"] in WORKLOADS):
            for v in pod_spec(w).get("volumes", []):
                if "secret" in v:
                    print(v["secret"]["secretName"], "%o" % v["secret"].get("defaultMode", 0o644))
    elif cmd == "probes":
        for w in (d for d in load(sys.stdin) if d["kind"] in WORKLOADS):
            for c in containers(pod_spec(w)):
                for kind, p in probes(c):
                    get = p.get("httpGet")
                    if get is None:
                        raise SystemExit(f"{c['name']} {kind}: only httpGet probes are run here")
                    print(c["name"], kind, get.get("path", "/"), resolve_port(c, get["port"]),
                          p.get("periodSeconds", 10), p.get("timeoutSeconds", 1),
                          p.get("failureThreshold", 3), p.get("initialDelaySeconds", 0))
    elif cmd == "grace":
        w = next(d for d in load(sys.stdin) if d["kind"] in WORKLOADS)
        print(pod_spec(w).get("terminationGracePeriodSeconds", 30))
    elif cmd == "secrets":
        for d in load(sys.stdin):
            if d["kind"] == "Secret":
                keys = dict(d.get("data") or {})
                for k, v in (d.get("stringData") or {}).items():
                    keys[k] = base64.b64encode(str(v).encode()).decode()
                print(d["metadata"]["name"], json.dumps(keys))
    elif cmd == "claims":
        for w in (d for d in load(sys.stdin) if d["kind"] in WORKLOADS):
            for v in pod_spec(w).get("volumes", []):
                if "persistentVolumeClaim" in v:
                    print(v["persistentVolumeClaim"]["claimName"])
    elif cmd == "names":
        for d in load(sys.stdin):
            if d["kind"] == sys.argv[2]:
                print(d["metadata"]["name"])
    elif cmd == "commands":
        for path in sys.argv[2:]:
            with open(path) as f:
                for w in (d for d in load(f) if d["kind"] in WORKLOADS):
                    for c in containers(pod_spec(w)):
                        print((c.get("command") or ["-"])[0])
    else:
        raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
