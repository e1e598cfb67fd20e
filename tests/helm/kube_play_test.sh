#!/usr/bin/env bash
# CTest (labels kube, integration): the Helm chart EXECUTED. helm renders
# deploy/helm/outbox-relay (scripts/helm_tools.sh's helm) and podman kube
# play runs what it renders, with the image the container test builds
# (localhost/outbox-relay:test, scripts/container.sh build: podman's layer
# cache makes it free once container_test has built it), against the
# suite's PostgreSQL and Kafka.
#
#   kube_play_test.sh image      build the image if needed (the fixture)
#   kube_play_test.sh relay      relay mode: 2 replicas, active + standby;
#                                the validate init container (below)
#   kube_play_test.sh poller     poller mode: 2 replicas, both polling
#   kube_play_test.sh statefulset
#                                tests/helm/values/statefulset.yaml: the
#                                StatefulSet form (persistence.enabled,
#                                file slot markers), below
#   kube_play_test.sh commands   every container command exists in the image
#   kube_play_test.sh tls        tests/helm/values/tls.yaml against the TLS
#                                servers of tls_e2e_test (tls_servers.sh)
#   kube_play_test.sh oneshot    docs/operations/kubernetes.md's one-shot
#                                Pods, executed (below)
#
# relay and poller check, with the chart's own rendered objects:
#   - both replicas start; relay: one active, one standby (/activez,
#     /status.json's role, the outbox_relay_role metric), /readyz 200 on
#     both;
#   - the liveness and readiness probes run are the ones the manifest
#     declares (read from it: HTTP GET path and port, run against each
#     pod), and podman's healthcheck is the liveness probe's;
#   - events reach Kafka (the topic comes from the chart's Secret, through
#     envFrom and ${VAR} in the relay YAML); SIGKILL of the active pod's
#     container: the other pod takes over, 0 events missing (distinct ids
#     in the topic against those written); the killed container, started
#     again, is a standby;
#   - stopping the pods drains within the manifest's
#     terminationGracePeriodSeconds: the program exits 0; relay: the slot is
#     confirmed past the last event; poller: every row is marked sent.
# relay also checks the chart's validate init container (validate.enabled,
# validate.connect: on by default; docs/operations/validate.md): in both
# replicas it ran `outbox-relay validate --connect` before the relay and
# exited 0 with its "ok slot: ..." line in its log; and a release whose
# table does not exist never starts its relay container, the init
# container's log saying why in one FAIL line.
# statefulset plays tests/helm/values/statefulset.yaml over the relay's
# values (persistence.enabled, postgres.slot_marker file): a StatefulSet of
# 2 pods, each with its claim's volume at postgres.state_dir. Both pods
# start, one active and one standby; events reach Kafka; each pod's
# volume holds its own slot marker (the standby's too: a standby writes
# its own file marker); both drain within the grace period (the standby
# first, so that it never holds the slot), the slot
# confirmed past the last event. Then, with no pod running, the slot is
# dropped and events are committed that no slot holds: each pod, played
# again with its claim (a rescheduled pod), is refused by its validate
# init container naming the marker, its relay never starts, and no slot
# is created anew.
# tls plays tests/helm/values/tls.yaml (extraVolumes, extraVolumeMounts,
# extraEnv) as it is, but for the servers' addresses and Secret names:
# the relay streams over TLS (pg_stat_ssl: the client certificate's CN)
# and its events reach Kafka over SASL_SSL.
# oneshot runs the page's "One-shot steps" blocks as printed (extracted
# as one_shot_test.py does: kube_play.py doc-block), for the release and
# database of the test (the define block's first line, as the page says),
# with the runbooks' ARGVs (grepped from docs/operations/*.md) and kubectl
# answered by one_shot_kubectl: from the render, and podman for the Pod
# (played as a workload is, beside nothing: the Deployment is not played,
# its `scale` recorded). The steps of runbooks.md's exit 4:
#   - the relay, the pod template's own ARGV run once (command block),
#     halts on a poison row (NULL key) with exit 4, naming it;
#   - the relay block with the on_invalid=dead_letter ARGV: the Pod
#     streams (/readyz), the events reach Kafka (100 distinct), the poison
#     is in the dead-letter topic and its `dead-lettering invalid` line in
#     the log; the relay-end block: the Pod drains (exit 0 within the
#     grace period) and is removed, the workload scaled 0 then back to
#     its replicas, the slot confirmed past the last event;
#   - the command block with the status ARGV: exit 0, the slot and its
#     confirmed position as psql reads them.
#
# Where podman kube play (4.3) is not a cluster, and what is done here:
#   - One played copy per replica. podman does create `replicas` pods for a
#     Deployment (NAME-pod-0, -1, ...), but they share one ConfigMap and,
#     with host networking, one port. Each replica is rendered with its own
#     http.port (the chart's value: http.listen, containerPort and the
#     probes follow it) and played as NAME-rI with replicas 1; all copies
#     share the slot, the slot marker id and the Secret, as a Deployment's
#     pods do.
#   - Host networking (hostNetwork: true added). The suite's servers listen
#     on 127.0.0.1 and Kafka advertises 127.0.0.1: from a pod's own network
#     namespace (bridge, or slirp4netns with allow_host_loopback) the
#     bootstrap broker is reachable but the advertised one is the pod's own
#     loopback. In a cluster each pod has its own IP, so one port serves
#     every replica; here each replica needs its own (above).
#   - The chart's Secret is made a podman secret by the test, as podman
#     4.3's envFrom reads one (JSON, base64 values): a Secret played by
#     kube play is stored as YAML, which its envFrom refuses ("not valid
#     JSON").
#   - podman 4.3.1's kube play crashes on a Secret volume (nil pointer in
#     VolumeFromSecret): the test writes the Secret's keys into a
#     directory as the kubelet would (owner root, group fsGroup, the
#     volume's defaultMode) and plays the volume as a hostPath of it.
#   - containerPort removed. podman 4.3 publishes every containerPort on
#     the host, which host networking refuses; the probes' named port
#     ("http") is resolved to its number first, as the kubelet does.
#   - Readiness is not gated: podman makes a healthcheck of the liveness
#     probe only (curl in the image; interval, timeout, retries, start
#     period from the probe), ignores readinessProbe, and has no Service
#     whose endpoints would follow it. The periodic healthcheck needs
#     systemd timers (none here): podman never runs it by itself, so a
#     failing liveness probe restarts nothing. This test runs both probes
#     itself, and the healthcheck once (podman healthcheck run).
#   - terminationGracePeriodSeconds is not honoured: podman kube down stops
#     pods with a timeout of 0 (SIGKILL at once), and a played container's
#     stop timeout is podman's 10 s. The kubelet's termination (SIGTERM,
#     SIGKILL after the grace period) is done here as podman pod stop -t
#     GRACE, then podman kube down removes the stopped pods.
#   - podman 4.3 plays init containers as "once" containers, removed after
#     their run (which races their exit: "cannot remove container ... as it
#     is running"); kube_play.py marks them "always" (the pod annotation
#     io.podman.annotations.init.container.type), so each is kept with its
#     log, as a kubelet keeps an init container's. An init container that
#     fails keeps the relay container from starting; podman restarts it
#     at once (restartPolicy Always), a kubelet with back-off.
#   - No restart back-off: a container whose process dies is restarted at
#     once (restartPolicy Always), so a killed active relay may win its slot
#     back before the standby's next retry. The test kills with podman kill
#     (which podman does not restart), sees the standby take over, then
#     starts the killed container itself, as the kubelet would.
#   - emptyDir becomes a named podman volume of the volume's name, shared
#     by every pod naming it so: each played copy's emptyDir is renamed
#     after its workload (one per pod, as in a cluster). The image's VOLUME
#     gets an anonymous volume. Both are removed at the end.
#   - The one-shot blocks' `kubectl exec pod/... -- curl localhost:9187`
#     (the chart's default http.port) reaches the Pod's own port (a free
#     one, host networking); their waiting loops are ended after 3
#     minutes (a cluster's would run until the operator stops them).
#   - podman 4.3 plays no StatefulSet: kube_play.py plays it as a
#     Deployment whose pod mounts the claim the StatefulSet controller
#     would bind to it, a named podman volume the test provisions and
#     gives the pod's fsGroup, as a provisioner and the kubelet would
#     (provision_claim); it outlives kube down, as a claim outlives its pod.
#   - No ServiceAccount, Service, PodDisruptionBudget, rollout, scheduling
#     or resource limits; the ServiceMonitor, PrometheusRule and dashboard
#     are checked offline by helm_chart.
source "$(dirname "$0")/../packaging/container_lib.sh"
phase=${1:?usage: kube_play_test.sh image|relay|poller|statefulset|commands|tls|oneshot}
# (OUTBOX_KUBE_IMAGE: another tag while developing, never the shared one.)
tag=${OUTBOX_KUBE_IMAGE:-$(image_tag 13)}   # container_lib.sh: the default (Debian 13) image
chart=$root/deploy/helm/outbox-relay
helm_dir=${OUTBOX_HELM_DIR:-${OUTBOX_CACHE:-$root/.cache}/helm}   # scripts/helm_tools.sh's
helm=$helm_dir/bin/helm py=$helm_dir/venv/bin/python
[ -x "$helm" ] && [ -x "$py" ] || die "helm or its venv missing under $helm_dir: run scripts/setup.sh"
kp() { "$py" "$root/tests/helm/kube_play.py" "$@"; }
KUBE_VERSION=$(sed -n 's/^KUBERNETES_VERSION = "\(.*\)"/\1/p' "$root/tests/helm/chart_test.py")
id=kube_$$ rel=kube-$$   # (table, slot, topic) and the Helm release
work=$(mktemp -d "/tmp/$id.XXXXXX")
played=() volumes=() secrets=()
playing=   # the process group of a kube play still running (kube_play)
cleanup() {
  local f v
  [ -z "$playing" ] || kill -TERM -- "-$playing" 2>/dev/null || true
  [ ! -f "$work/played.list" ] || mapfile -t -O "${#played[@]}" played <"$work/played.list"
  [ ! -f "$work/volumes.list" ] || mapfile -t -O "${#volumes[@]}" volumes <"$work/volumes.list"
  for f in "${played[@]}"; do
    pm kube down "$f" >/dev/null 2>&1 || true
  done
  for v in "${volumes[@]}"; do
    pm volume rm -f "$v" >/dev/null 2>&1 || true
  done
  for v in "${secrets[@]}"; do
    pm secret rm "$v" >/dev/null 2>&1 || true
  done
  psql -q -c "DROP TABLE IF EXISTS $id" >/dev/null 2>&1 || true
  psql -Atc "SELECT pg_drop_replication_slot('$id') FROM pg_replication_slots WHERE slot_name = '$id'" \
    >/dev/null 2>&1 || true
  [ ! -d "$work/tls" ] || "$root/tests/e2e/tls_servers.sh" stop "$work/tls" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
# ctest ends a test past its TIMEOUT with SIGKILL, which no trap sees: the
# pods would be left restarting for the rest of the suite. Ending itself
# first (TERM interrupts the `wait`s and sleeps below) runs the cleanup.
deadline=${OUTBOX_KUBE_DEADLINE_S:-540}
trap 'echo "FAIL: $phase: not done within $deadline s (OUTBOX_KUBE_DEADLINE_S)"; exit 1' TERM
(sleep "$deadline" && kill -TERM $$) >/dev/null 2>&1 &
watchdog=$!
trap 'kill "$watchdog" 2>/dev/null || true; cleanup' EXIT

# kube_play YAML LOG INIT SECONDS [first-fail]: `podman kube play YAML`
# (its output in LOG), bounded. podman 4.3's kube play waits for the pod's
# init container INIT to succeed, restarting it while it fails, as a
# kubelet would (validate --connect may fail once while a server is busy),
# for ever if it never does. Returns 0 once kube play has; 3 after SECONDS;
# with first-fail, 2 as soon as INIT has printed a FAIL line. $init_log
# holds what INIT printed, every run of it.
kube_play() {
  local yaml=$1 log=$2 init=$3 limit=$4 first_fail=${5:-} pid rc t0=$SECONDS
  init_log=
  # In a session of its own, so that stopping it stops podman too (left
  # running, it held the next `podman kube down` for minutes).
  setsid "$root/scripts/container.sh" podman kube play "$yaml" >"$log" 2>&1 &
  pid=$! playing=$!
  while kill -0 "$pid" 2>/dev/null; do
    init_log=$(pm logs "$init" 2>&1 || true)
    if { [ -n "$first_fail" ] && grep -q '^FAIL ' <<<"$init_log"; } ||
      [ $((SECONDS - t0)) -ge "$limit" ]; then
      kill -TERM -- "-$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
      playing=
      grep -q '^FAIL ' <<<"$init_log" && return 2
      return 3
    fi
    sleep 0.5
  done
  wait "$pid" && rc=0 || rc=$?
  playing=
  init_log=$(pm logs "$init" 2>&1 || true)
  return $rc
}

render() {  # render OUT VALUES [helm args...]
  local out=$1 values=$2; shift 2
  "$helm" template "$rel" "$chart" --namespace kube --kube-version "$KUBE_VERSION" \
    -f "$values" "$@" >"$out" 2>"$work/helm.err" ||
    { cat "$work/helm.err"; exit 1; }
}

http_code() { curl -s -o /dev/null -m 5 -w '%{http_code}' "http://127.0.0.1:$1$2" || true; }
is_200() { [ "$(http_code "$1" "$2")" = 200 ]; }
role() { curl -s -m 5 "http://127.0.0.1:$1/status.json" | "$py" -c 'import json,sys; print(json.load(sys.stdin).get("role", ""))' 2>/dev/null || true; }
# main_container POD: the pod's container of the chart (not the infra one).
# (kube play names a container POD-NAME: the init container POD-validate.)
main_container() { pm ps -a --filter "pod=$1" --format '{{.Names}}' | grep -v -- '-infra$\|-validate$' | head -1; }
logs() { pm logs "$1" 2>&1 | grep -v '"kafka producer"\|"config"\|CONFWARN' | tail -"${2:-5}"; }

# provision_claim NAME [FSGROUP]: the volume a StatefulSet pod's claim
# binds (kube_play.py play), made once as a provisioner would; at each
# mount the kubelet gives a volume the pod's fsGroup (group-owned,
# setgid, group-writable), done here on the named podman volume.
provision_claim() {
  local dir
  pm volume exists "$1" || pm volume create "$1" >/dev/null
  volumes+=("$1")
  [ -n "${2:-}" ] || return 0
  dir=$(pm volume inspect -f '{{.Mountpoint}}' "$1")
  chgrp "$2" "$dir" && chmod 2770 "$dir"
}

# play_replicas VALUES N [helm args...]: renders and plays N replicas; sets
# ports[i], pods[i], ctrs[i], and rendered (replica 0's manifest).
play_replicas() {
  local values=$1 n=$2 i port yaml
  shift 2
  ports=() pods=() ctrs=()
  for ((i = 0; i < n; i++)); do
    port=$(free_port)
    render "$work/rendered-$i.yaml" "$values" "$@" --set http.port="$port"
    kp play "-r$i" "$work/secrets" <"$work/rendered-$i.yaml" >"$work/played-$i.yaml"
    yaml=$work/played-$i.yaml
    if [ $i = 0 ]; then
      while read -r name keys; do
        pm secret rm "$name" >/dev/null 2>&1 || true
        echo "$keys" | pm secret create "$name" - >/dev/null
        secrets+=("$name")
      done < <(kp secrets <"$work/rendered-$i.yaml")
    fi
    played+=("$yaml")
    volumes+=($(kp names ConfigMap <"$yaml"))
    while read -r claim; do
      provision_claim "$claim" "$(kp get "deployment/$(kp names Deployment <"$yaml")" <"$yaml" |
        jq -r '.spec.template.spec.securityContext.fsGroup // empty')"
    done < <(kp claims <"$yaml")
    # podman names a Deployment's pods NAME-pod-0, -1, ...
    pods[i]=$(kp names Deployment <"$yaml")-pod-0
    kube_play "$yaml" "$work/play-$i.log" "${pods[i]}-validate" 240 || {
      rc=$?
      cat "$work/play-$i.log"
      fail "podman kube play of replica $i: $([ $rc = 3 ] && echo "not done in 240 s" || echo "exit $rc");" \
        "its validate init container ran $(grep -c '^ok config: ' <<<"$init_log") time(s), saying:" \
        "$(grep '^FAIL ' <<<"$init_log" | sort | uniq -c)"
      exit 1
    }
    # validate failed before it passed (podman restarted it): why, once.
    if grep -q '^FAIL ' <<<"$init_log"; then
      echo "replica $i: validate failed before it passed: $(grep '^FAIL ' <<<"$init_log" | sort | uniq -c)"
    fi
    ports[i]=$port
    ctrs[i]=$(main_container "${pods[i]}")
    [ -n "${ctrs[i]}" ] || { fail "replica $i: no pod or container"; exit 1; }
    volumes+=($(pm inspect -f '{{range .Mounts}}{{.Name}} {{end}}' "${ctrs[i]}"))
  done
  rendered=$work/rendered-0.yaml
}

# kube_down YAML: removes the pods kube play made of YAML, as a cluster
# deletes them. podman 4.3's kube down once exited non-zero with no output
# here (a fresh CI machine, kube_play_statefulset, after the pod's stop):
# it is asked again, then the pods are removed by name. Fails (with what
# podman said) only when a pod is left.
kube_down() {
  local f=$1 pod left=
  pm kube down "$f" >"$work/down.log" 2>&1 && return 0
  echo "podman kube down $f: exit $?, asked again: $(tail -2 "$work/down.log")"
  sleep 2
  pm kube down "$f" >>"$work/down.log" 2>&1 && return 0
  for pod in $(kp names Deployment <"$f"); do
    pod=$pod-pod-0
    pm pod exists "$pod" || continue
    pm pod rm -f "$pod" >>"$work/down.log" 2>&1 || true
    ! pm pod exists "$pod" || left="$left $pod"
  done
  [ -z "$left" ] || { fail "podman kube down $f left$left: $(tail -3 "$work/down.log")"; return 1; }
}

# check_probes I: the manifest's probes, run against replica I; podman's
# healthcheck is its liveness probe.
check_probes() {
  local i=$1 ctr kind path port period timeout failures delay hc n=0
  while read -r ctr kind path port period timeout failures delay; do
    n=$((n + 1))
    [ "$port" = "${ports[i]}" ] || fail "replica $i: $kind port $port is not the pod's http port ${ports[i]}"
    wait_for 60 is_200 "$port" "$path" ||
      fail "replica $i: $kind GET $path on $port answered $(http_code "$port" "$path")"
    [ "$kind" = livenessProbe ] || continue
    hc=$(pm inspect -f '{{json .Config.Healthcheck}}' "${ctrs[i]}")
    # podman 4.3: {"Test":["CMD-SHELL","curl","-f","http://localhost:PORT/PATH","||","exit","1"],
    #              "StartPeriod":ns,"Interval":ns,"Timeout":ns,"Retries":n}
    "$py" - "$hc" "$port" "$path" "$period" "$timeout" "$failures" "$delay" <<'PY' ||
import json, sys
hc, port, path, period, timeout, failures, delay = sys.argv[1:]
h = json.loads(hc)
want = {"Interval": int(period) * 10**9, "Timeout": int(timeout) * 10**9,
        "Retries": int(failures), "StartPeriod": int(delay) * 10**9}
got = {k: h.get(k) for k in want}
url = f"http://localhost:{port}{path}"
sys.exit(0 if got == want and url in h["Test"] else f"{h} is not GET {url} {want}")
PY
      fail "replica $i: podman's healthcheck is not the liveness probe"
    pm healthcheck run "${ctrs[i]}" </dev/null >/dev/null 2>&1 ||
      fail "replica $i: podman healthcheck run failed: $(pm inspect -f '{{json .State.Health}}' "${ctrs[i]}")"
  done < <(kp probes <"$work/rendered-$i.yaml")
  [ $n = 2 ] || fail "replica $i: $n probes in the manifest, want liveness and readiness"
}

# stop_pod I GRACE: the kubelet's termination (SIGTERM, SIGKILL after the
# grace period) as podman pod stop -t; the program must exit 0 in time.
stop_pod() {
  local i=$1 grace=$2 start=$SECONDS took code
  pm pod stop -t "$grace" "${pods[i]}" >/dev/null
  took=$((SECONDS - start))
  code=$(pm inspect -f '{{.State.ExitCode}}' "${ctrs[i]}")
  [ "$code" = 0 ] || fail "replica $i: exit $code after SIGTERM, want 0: $(logs "${ctrs[i]}")"
  [ $took -lt "$grace" ] || fail "replica $i: stopping took $took s, grace period $grace s"
  echo "replica $i drained in $took s (grace period $grace s)"
}

# kill_and_takeover TABLE FROM: writes events FROM..FROM+99 while SIGKILLing
# the container of the replica whose /activez is 200 (relay) or of
# replica 0 (poller); the other must carry on. Sets killed.
kill_and_takeover() {
  local table=$1 from=$2 i other writer
  killed=0
  if [ "$phase" = relay ]; then
    is_200 "${ports[0]}" /activez || killed=1
  fi
  other=$((1 - killed))
  write_events "$table" "$from" $((from + 99)) &
  writer=$!
  # podman kill: podman does not restart what it killed itself, so the
  # other replica takes the slot (a process killed from outside is
  # restarted at once, with no back-off, and may win the slot back).
  pm kill -s KILL "${ctrs[killed]}" >/dev/null
  wait $writer || fail "writing events $from.. failed"
  code=$(pm wait "${ctrs[killed]}")
  [ "$code" = 137 ] || fail "replica $killed: exit $code after SIGKILL, want 137"
  if [ "$phase" = relay ]; then
    wait_for 120 is_200 "${ports[other]}" /activez ||
      fail "replica $other did not take over: $(logs "${ctrs[other]}")"
    [ "$(role "${ports[other]}")" = active ] || fail "replica $other: role $(role "${ports[other]}") after takeover"
  fi
  # The kubelet's restart of the killed container.
  pm start "${ctrs[killed]}" >/dev/null 2>&1
  wait_for 120 is_200 "${ports[killed]}" /readyz ||
    fail "replica $killed: /readyz $(http_code "${ports[killed]}" /readyz) after its restart: $(logs "${ctrs[killed]}")"
  if [ "$phase" = relay ]; then
    [ "$(role "${ports[killed]}")" = standby ] || fail "restarted replica $killed: role $(role "${ports[killed]}"), want standby"
  fi
}

# one_shot_kubectl: `kubectl` for the oneshot phase, answered from the
# render ($rendered) and by podman, for what the page's one-shot blocks run
# (anything else is an error). The workload is not played (its pods are
# none: the one-shot Pod runs beside nothing), `scale` is recorded in
# $work/scaled; `apply -f -` plays the Pod (kube_play.py one-shot, then
# play with the suffix -$rel: pod names are global on this machine);
# `delete` is the kubelet's termination (pod stop -t GRACE) then kube down.
# `exec ... localhost:9187` goes to the pod's http.port (9187 is the
# chart's default; here a free port, host networking). A loop of the
# blocks that waits for longer than 3 minutes is ended (kill of the
# subshell running them, $oneshot_sub).
one_shot_kubectl() {
  local ns=$2 verb=$3 a=" $* " p ctr state code t0 args=()
  [ "$1 $ns" = "-n kube" ] || { echo "kubectl: unexpected $*" >&2; return 1; }
  if [ "$SECONDS" -gt "$oneshot_deadline" ]; then
    echo "kubectl $*: still waiting after 3 minutes" >>"$work/kubectl.err"
    kill "$oneshot_sub"
  fi
  shift 3
  case "$verb $a" in
    "get "*" get deployment,statefulset -o name -l "*) kp select deployment,statefulset "$5" <"$rendered" ;;
    "get "*" -o json ") kp get "$1" <"$rendered" ;;
    "get "*" -o jsonpath={.spec.replicas} ") kp get "$1" <"$rendered" | jq -j .spec.replicas ;;
    "scale "*) echo "${2#--replicas=}" >>"$work/scaled" ;;
    "get "*" get pods -o name -l "*) ;;   # the workload's pods: none played
    "apply "*" apply -f - ")
      cat >"$work/pod.json"
      p=$(jq -r .metadata.name "$work/pod.json")
      kp one-shot "$work/pod.json" <"$rendered" | kp play "-$rel" "$work/secrets" >"$work/oneshot-$p.yaml"
      echo "$work/oneshot-$p.yaml" >>"$work/played.list"
      pm kube play "$work/oneshot-$p.yaml" >"$work/play-$p.log" 2>&1 ||
        { cat "$work/play-$p.log" >&2; return 1; }
      ctr=$(main_container "$p-$rel")
      pm inspect -f '{{range .Mounts}}{{.Name}} {{end}}' "$ctr" | tr ' ' '\n' >>"$work/volumes.list"
      echo "$p $(pm inspect -f '{{.HostConfig.RestartPolicy.Name}}' "$ctr")" >>"$work/restart-policy"
      kp names ConfigMap <"$work/oneshot-$p.yaml" >>"$work/volumes.list"
      echo "pod/$p created" ;;
    "exec "*)
      ctr=$(main_container "${1#pod/}-$rel")
      state=$(pm inspect -f '{{.State.Status}}' "$ctr" 2>/dev/null || echo missing)
      if [ "$state" != running ]; then
        echo "kubectl exec $1: the container is $state: $(logs "$ctr")" >>"$work/kubectl.err"
        kill "$oneshot_sub"
      fi
      shift 2   # POD --
      for p in "$@"; do args+=("${p//localhost:9187/localhost:$oneshot_port}"); done
      pm exec "$ctr" "${args[@]}" ;;
    "logs "*) pm logs "$(main_container "${1#pod/}-$rel")" 2>&1 ;;
    "get "*" -o jsonpath={.status.phase} ")
      ctr=$(main_container "${1#pod/}-$rel")
      case $(pm inspect -f '{{.State.Status}} {{.State.ExitCode}}' "$ctr") in
        "exited 0") echo Succeeded ;;
        exited*) echo Failed ;;
        running*) echo Running ;;
        *) echo Pending ;;
      esac ;;
    "get "*" -o jsonpath={.status.containerStatuses"*".state.terminated.exitCode}"*)
      pm inspect -f '{{.State.ExitCode}}' "$(main_container "${1#pod/}-$rel")" ;;
    "delete "*)
      p=${1#pod/} t0=$SECONDS
      ctr=$(main_container "$p-$rel")
      pm pod stop -t "$grace" "$p-$rel" >/dev/null
      code=$(pm inspect -f '{{.State.ExitCode}}' "$ctr")
      echo "pod/$p $code $((SECONDS - t0))" >>"$work/deleted"   # exit code, seconds
      pm kube down "$work/oneshot-$p.yaml" >/dev/null
      echo "pod \"$p\" deleted" ;;
    *) echo "kubectl: unexpected $verb $*" >&2; return 1 ;;
  esac
}

# run_blocks OUT ARGV BLOCK...: the page's blocks as printed, in a shell
# of their own (set -e, as a script of them would run; a `( ) ||` would
# disable it), with ARGV set and kubectl being one_shot_kubectl; the
# relay block's REPLICAS carries over to the next blocks, as in the
# operator's terminal.
run_blocks() {
  local out=$1 argv=$2 rc b
  shift 2
  set +e
  (
    set -e
    oneshot_sub=$BASHPID oneshot_deadline=$((SECONDS + 180))
    kubectl() { one_shot_kubectl "$@"; }
    ARGV=$argv
    [ ! -f "$work/shell.sh" ] || source "$work/shell.sh"
    for b; do source "$work/block-$b.sh"; done
    [ -z "${REPLICAS+x}" ] || declare -p REPLICAS >"$work/shell.sh"
  ) >"$out" 2>&1
  rc=$?
  set -e
  return $rc
}

values_file() {  # values_file MODE: the test's values (helm -f)
  cat <<EOF
mode: $1
image:
  repository: ${tag%:*}
  tag: ${tag##*:}
  pullPolicy: Never
config:
  kafka:
    brokers: "$BROKERS"
  outbox:
    tables:
      - table: public.$id
    # From the chart's Secret (envFrom), expanded by the relay.
    topic: "\${KUBE_TOPIC}"
databases:
  - name: app
    conninfo: "$CONNINFO"
    slot: $id
secret:
  stringData:
    KUBE_TOPIC: "$id.events"
EOF
  [ "$1" = relay ] || printf 'poller:\n  replicas: 2\n'
}

case $phase in
  image)
    # container_lib.sh's build, as container_test's (the same arguments: a
    # layer cache hit after it).
    start=$SECONDS
    build_image 13 "$tag" || exit 1
    echo "image $tag ready in $((SECONDS - start)) s" ;;

  commands)
    # Every container of every rendered manifest (default values and each
    # tests/helm/values/*.yaml), init containers included.
    image=$(pm image inspect -f '{{index .Config.Entrypoint 0}}' "$tag") ||
      die "image $tag missing: run kube_play_test.sh image"
    n=0
    for values in /dev/null "$root"/tests/helm/values/*.yaml; do
      render "$work/commands-$n.yaml" "$values"
      n=$((n + 1))
    done
    cmds=$(kp commands "$work"/commands-*.yaml | sed "s|^-\$|$image|" | sort -u)
    [ -n "$cmds" ] || fail "no container command in $n manifests"
    echo "commands of $n manifests: $(echo $cmds)"
    missing=$(pm run --rm --pull=never --health-interval disable --entrypoint sh "$tag" -c \
      'for c; do command -v "$c" >/dev/null || echo "$c"; done' sh $cmds 2>"$work/run.err") ||
      fail "podman run $tag failed: $(tail -3 "$work/run.err")"
    [ -z "$missing" ] || fail "not in the image $tag: $missing"
    finish "every container command of the chart is in the image" ;;

  relay | poller)
    if [ "$phase" = relay ]; then
      make_table "$id"
    else
      sed "s/\boutbox\b/$id/g" "$root/sql/outbox.sql" | psql -q -v ON_ERROR_STOP=1
    fi
    topic=$id.events
    values_file "$phase" >"$work/values.yaml"
    start=$SECONDS
    play_replicas "$work/values.yaml" 2
    grace=$(kp grace <"$rendered")

    # The init container ran validate --connect first, to success.
    if [ "$phase" = relay ]; then
      for i in 0 1; do
        v=${pods[i]}-validate
        code=$(pm inspect -f '{{.State.ExitCode}}' "$v" 2>&1) ||
          fail "replica $i: no validate init container: $code"
        [ "$code" = 0 ] || fail "replica $i: validate exited $code: $(pm logs "$v" 2>&1 | tail -3)"
        out=$(pm logs "$v" 2>&1 || true)   # (grep -q would SIGPIPE pm under pipefail)
        grep -q '^ok slot: ' <<<"$out" ||
          fail "replica $i: no 'ok slot:' line from validate: $(tail -3 <<<"$out")"
      done
    fi

    # Both replicas up; relay: one active, one standby.
    for i in 0 1; do
      wait_for 120 is_200 "${ports[i]}" /readyz ||
        fail "replica $i: /readyz answered $(http_code "${ports[i]}" /readyz): $(logs "${ctrs[i]}")"
    done
    if [ "$phase" = relay ]; then
      one_active() { [ "$(role "${ports[0]}") $(role "${ports[1]}")" = "active standby" ] ||
                     [ "$(role "${ports[0]}") $(role "${ports[1]}")" = "standby active" ]; }
      wait_for 120 one_active ||
        fail "roles: replica 0 $(role "${ports[0]}"), replica 1 $(role "${ports[1]}"); want one active, one standby"
      actives=0
      for i in 0 1; do
        if is_200 "${ports[i]}" /activez; then actives=$((actives + 1)); fi
      done
      [ $actives = 1 ] || fail "/activez 200 on $actives replicas, want 1"
      # The metric says the same (outbox_relay_role{role="..."} 1).
      for i in 0 1; do
        r=$(role "${ports[i]}")
        metrics=$(curl -s -m 5 "http://127.0.0.1:${ports[i]}/metrics" || true)
        grep -Eq "^outbox_relay_role\{([^}]*,)?role=\"$r\"(,[^}]*)?\} 1\$" <<<"$metrics" ||
          fail "replica $i: outbox_relay_role{role=\"$r\"} is not 1"
      done
    fi
    for i in 0 1; do
      check_probes "$i"
    done

    # Events reach Kafka; SIGKILL of the active container loses none.
    write_events "$id" 1 100
    wait_events "$topic" 100 || fail "100 events did not reach Kafka: $(logs "${ctrs[0]}") $(logs "${ctrs[1]}")"
    kill_and_takeover "$id" 101
    write_events "$id" 201 249
    last=$(write_last_event "$id" 250)
    wait_events "$topic" 250 || fail "$(distinct_in_topic "$topic") of 250 events reached Kafka"
    got=$(distinct_in_topic "$topic")
    [ "$got" = 250 ] || fail "the topic holds $got distinct events, want 250 (missing $((250 - got)))"

    # The pods drain within the grace period (the active one first: the
    # standby takes over, then drains too).
    first=0
    [ "$phase" = relay ] && ! is_200 "${ports[0]}" /activez && first=1
    stop_pod $first "$grace"
    stop_pod $((1 - first)) "$grace"
    if [ "$phase" = relay ]; then
      confirmed=$(slot_confirmed "$id")
      if [ -z "$confirmed" ]; then
        fail "slot $id missing after the pods stopped"
      elif ! lsn_at_least "$confirmed" "$last"; then
        fail "slot confirmed to $confirmed, before the last event ($last)"
      fi
    else
      unsent=$(psql -Atc "SELECT count(*) FROM $id WHERE sent_at IS NULL")
      [ "$unsent" = 0 ] || fail "$unsent rows not marked sent after the pods stopped"
    fi
    for f in "${played[@]}"; do
      kube_down "$f" || true
    done
    played=()
    echo "$phase: $((SECONDS - start)) s from the first kube play to the last kube down"
    if [ "$phase" = relay ]; then
      # A table that does not exist: validate fails, the relay never starts.
      render "$work/bad.yaml" "$work/values.yaml" --set http.port="$(free_port)" \
        --set "config.outbox.tables[0].table=public.${id}_missing"
      kp play -bad "$work/secrets" <"$work/bad.yaml" >"$work/played-bad.yaml"
      played+=("$work/played-bad.yaml")
      volumes+=($(kp names ConfigMap <"$work/played-bad.yaml") "$(kp names Deployment <"$work/played-bad.yaml")-tmp")
      bad=$(kp names Deployment <"$work/played-bad.yaml")-pod-0
      # podman restarts the failing pod's init container, as a kubelet
      # would with back-off: its log holds one run after another. kube play
      # itself may wait for that init container to succeed, for ever (it
      # once held the test to its timeout, the pod left restarting): it runs
      # in the background until validate has said why.
      kube_play "$work/played-bad.yaml" "$work/play-bad.log" "$bad-validate" 120 first-fail || true
      out=$init_log
      line=$(grep -m1 '^FAIL ' <<<"$out" || true)
      echo "validate in the failing pod: $line"
      [ "$line" = "FAIL tables: outbox table public.${id}_missing does not exist in database $(psql -Atc 'SELECT current_database()')" ] ||
        fail "the failing pod's validate said: $(tail -3 <<<"$out")"
      running=$(pm ps --filter "pod=$bad" --filter status=running --format '{{.Names}}' | grep -c -- '-relay$' || true)
      [ "$running" = 0 ] || fail "the relay container of the failing pod runs"
    fi
    finish "$phase mode: the chart's pods ran, took over after SIGKILL with 0 missing, drained" ;;

  statefulset)
    # tests/helm/values/statefulset.yaml over the relay's values: a
    # StatefulSet, each pod's slot marker a file on its own volume.
    make_table "$id"
    topic=$id.events
    values_file relay >"$work/values.yaml"
    start=$SECONDS
    play_replicas "$work/values.yaml" 2 -f "$root/tests/helm/values/statefulset.yaml"
    grace=$(kp grace <"$rendered")
    [ -n "$(kp names StatefulSet <"$rendered")" ] || fail "the render has no StatefulSet"
    mount=$(kp get "statefulset/$(kp names StatefulSet <"$rendered")" <"$rendered" |
      jq -r '.spec.template.spec.containers[0].volumeMounts[] | select(.name == "state") | .mountPath')
    claims=()
    for i in 0 1; do
      claims[i]=$(kp claims <"$work/played-$i.yaml")
      wait_for 120 is_200 "${ports[i]}" /readyz ||
        fail "replica $i: /readyz answered $(http_code "${ports[i]}" /readyz): $(logs "${ctrs[i]}")"
    done
    one_active() { [ "$(role "${ports[0]}") $(role "${ports[1]}")" = "active standby" ] ||
                   [ "$(role "${ports[0]}") $(role "${ports[1]}")" = "standby active" ]; }
    wait_for 120 one_active ||
      fail "roles: replica 0 $(role "${ports[0]}"), replica 1 $(role "${ports[1]}"); want one active, one standby"
    write_events "$id" 1 100
    last=$(write_last_event "$id" 101)
    wait_events "$topic" 101 || fail "$(distinct_in_topic "$topic") of 101 events reached Kafka"

    # Each pod's marker, on its own volume (postgres.state_dir $mount).
    for i in 0 1; do
      marker=$(pm volume inspect -f '{{.Mountpoint}}' "${claims[i]}")/$id.slot
      [ -f "$marker" ] || { fail "replica $i ($(role "${ports[i]}")): no slot marker $id.slot in its volume ${claims[i]} ($mount)"; continue; }
      grep -q "^slot=$id\$" "$marker" || fail "replica $i: the marker names another slot: $(head -3 "$marker")"
      echo "replica $i ($(role "${ports[i]}")): marker $(grep -E '^(system_id|confirmed_lsn)=' "$marker" | tr '\n' ' ')"
    done

    # The pods drain and are removed, the standby first: it never holds the
    # slot, so its marker is only what it wrote as a standby. The volumes
    # stay, as a StatefulSet's claims do.
    first=1
    is_200 "${ports[0]}" /activez || first=0
    stop_pod $first "$grace"
    stop_pod $((1 - first)) "$grace"
    confirmed=$(slot_confirmed "$id")
    [ -n "$confirmed" ] && lsn_at_least "$confirmed" "$last" ||
      fail "slot $id confirmed to '$confirmed', before the last event ($last)"
    for f in "${played[@]}"; do
      kube_down "$f" || true
    done

    # The slot is dropped while no pod runs, and events are committed that
    # no slot holds. Each pod, scheduled again with its claim, must refuse
    # to create the slot anew: its validate init container says why, the
    # relay never starts, and no slot appears.
    psql -Atc "SELECT pg_drop_replication_slot('$id')" >/dev/null
    write_events "$id" 102 110
    for i in 0 1; do
      rc=0
      kube_play "$work/played-$i.yaml" "$work/replay-$i.log" "${pods[i]}-validate" 120 first-fail || rc=$?
      line=$(grep -m1 '^FAIL ' <<<"$init_log" || true)
      echo "replica $i rescheduled: rc $rc: $line"
      [ "$rc" = 2 ] || fail "replica $i: kube play of the rescheduled pod: rc $rc, want validate's FAIL (2): $(tail -3 <<<"$init_log")"
      grep -q "does not exist, but this relay streamed from it before" <<<"$line" ||
        fail "replica $i: validate did not name the marker: $line"
      running=$(pm ps --filter "pod=${pods[i]}" --filter status=running --format '{{.Names}}' | grep -c -- '-relay$' || true)
      [ "$running" = 0 ] || fail "replica $i: the relay container runs"
      kube_down "$work/played-$i.yaml" || true
    done
    [ -z "$(slot_confirmed "$id")" ] || fail "slot $id was created anew"
    echo "statefulset: $((SECONDS - start)) s"
    finish "StatefulSet: the chart's pods ran with file markers on their volumes, drained, and rescheduled after the slot was dropped refused to create it anew" ;;

  tls)
    # The servers of tls_e2e_test; the test's psql and Kafka reads use
    # their plain listeners (postgres trusted on loopback, PLAINTEXT).
    chmod 755 "$work"   # PostgreSQL runs as its own user under it
    "$root/tests/e2e/tls_servers.sh" start "$work/tls" >"$work/tls.log" 2>&1 ||
      { tail -20 "$work/tls.log"; die "tls_servers.sh start failed"; }
    tget() { sed -n "s/^$1=//p" "$work/tls/env"; }
    PGPORT=$(tget PGPORT) BROKERS=$(tget OUTBOX_KAFKA_BROKERS) certs=$(tget OUTBOX_TLS_CERTS)
    topic=$id.events
    make_table "$id"
    # The example as it is, but for where the servers are and the names of
    # the Secrets it refers to (theirs would be shared on this machine).
    sed -e "s/host=postgres port=5432 dbname=app/host=127.0.0.1 port=$PGPORT dbname=postgres/" \
        -e "s/\"kafka:9093\"/\"$(tget OUTBOX_TLS_KAFKA_SASL_SSL)\"/" \
        -e "s/secretName: outbox-relay-tls/secretName: $rel-tls/" \
        -e "s/^        name: relay\$/        name: $rel-kafka-user/" \
        "$root/tests/helm/values/tls.yaml" >"$work/tls.yaml"
    cat >"$work/values.yaml" <<VALUES
image:
  repository: ${tag%:*}
  tag: ${tag##*:}
  pullPolicy: Never
config:
  outbox:
    tables:
      - table: public.$id
    topic: "$topic"
secret:
  existingSecret: ""
  stringData:
    PGPASSWORD: "$(tget OUTBOX_TLS_PG_PASSWORD)"
VALUES
    # The Kafka user's Secret (extraEnv's secretKeyRef), as podman reads it.
    pm secret rm "$rel-kafka-user" >/dev/null 2>&1 || true
    printf '{"password": "%s"}' "$(printf %s "$(tget OUTBOX_TLS_KAFKA_PASSWORD)" | base64 -w0)" |
      pm secret create "$rel-kafka-user" - >/dev/null
    secrets+=("$rel-kafka-user")
    render "$work/tls-rendered.yaml" "$work/tls.yaml" -f "$work/values.yaml"
    # The certificate Secret, written as the kubelet writes a Secret volume.
    fs_group=$("$py" -c 'import sys, yaml
for d in yaml.safe_load_all(sys.stdin):
    if d and d["kind"] == "Deployment":
        print(d["spec"]["template"]["spec"]["securityContext"]["fsGroup"])' <"$work/tls-rendered.yaml")
    while read -r name mode; do
      [ "$name" = "$rel-tls" ] || die "unexpected Secret volume $name"
      mkdir -p "$work/secrets/$name"
      cp "$certs/ca.pem" "$certs/client.pem" "$certs/client.key" "$work/secrets/$name/"
      chown -R "0:$fs_group" "$work/secrets/$name"
      chmod "$mode" "$work/secrets/$name"/*
      chmod 0755 "$work/secrets" "$work/secrets/$name"
    done < <(kp secret-volumes <"$work/tls-rendered.yaml")
    [ -d "$work/secrets/$rel-tls" ] || fail "the example mounts no Secret volume"
    start=$SECONDS
    play_replicas "$work/tls.yaml" 1 -f "$work/values.yaml"
    wait_for 120 is_200 "${ports[0]}" /activez ||
      fail "the relay did not stream over TLS: $(logs "${ctrs[0]}")"
    ssl=$(psql -Atc "SELECT s.ssl, s.client_dn FROM pg_stat_replication r JOIN pg_stat_ssl s USING (pid) WHERE r.usename = 'relay'")
    [[ "$ssl" == "t|"*"CN=relay"* ]] ||
      fail "the replication connection is not TLS with the client certificate: '$ssl'"
    write_events "$id" 1 50
    wait_events "$topic" 50 ||
      fail "$(distinct_in_topic "$topic") of 50 events reached Kafka over SASL_SSL: $(logs "${ctrs[0]}")"
    stop_pod 0 "$(kp grace <"$rendered")"
    kube_down "${played[0]}" || true
    played=()
    echo "tls: $((SECONDS - start)) s from kube play to kube down"
    finish "tls.yaml: verify-full with a client certificate and SASL_SSL, certificates from extraVolumes" ;;

  oneshot)
    # docs/operations/kubernetes.md's one-shot Pods, executed: the page's
    # blocks as printed, kubectl answered by one_shot_kubectl (the render
    # and podman); the ARGVs are the runbooks'.
    page=$root/docs/operations/kubernetes.md
    for b in define relay relay-end command; do
      kp doc-block "$b" <"$page" >"$work/block-$b.sh" || exit 1
    done
    # "Define, for the release and the database entry concerned": the
    # block's first line names them.
    line=$(head -1 "$work/block-define.sh")
    [ "$line" = "NS=outbox RELEASE=outbox DB=app" ] || die "the define block opens with '$line'"
    sed -i "1s/.*/NS=kube RELEASE=$rel DB=app/" "$work/block-define.sh"
    dead_argv=$(kp runbook-argv 'outbox.on_invalid=dead_letter' "$root")
    status_argv=$(kp runbook-argv '"status"' "$root")
    # The outbox table with a nullable aggregateid (the record key): a row
    # without one cannot become a record, a poison event (exit 4 under
    # on_invalid halt).
    psql -q -v ON_ERROR_STOP=1 -c "CREATE TABLE $id (id uuid PRIMARY KEY,
      aggregatetype text NOT NULL, aggregateid text, type text NOT NULL, payload jsonb)"
    topic=$id.events dead=$id.dead
    values_file relay >"$work/values.yaml"
    # A dead-letter topic of the test's own (the default,
    # outbox.dead_letter, would be shared with the suite's other tests).
    "$py" - "$work/values.yaml" "$dead" <<'PY'
import sys, yaml
path, topic = sys.argv[1:]
v = yaml.safe_load(open(path))
v["config"]["outbox"]["dead_letter_topic"] = topic
yaml.safe_dump(v, open(path, "w"), sort_keys=False)
PY
    oneshot_port=$(free_port)
    render "$work/rendered.yaml" "$work/values.yaml" --set http.port="$oneshot_port"
    rendered=$work/rendered.yaml
    grace=$(kp grace <"$rendered")
    replicas=$("$py" -c 'import sys, yaml
print(next(d for d in yaml.safe_load_all(sys.stdin) if d and d["kind"] == "Deployment")["spec"]["replicas"])' <"$rendered")
    while read -r name keys; do
      pm secret rm "$name" >/dev/null 2>&1 || true
      echo "$keys" | pm secret create "$name" - >/dev/null
      secrets+=("$name")
    done < <(kp secrets <"$rendered")
    start=$SECONDS

    # The runbooks' exit 4, for real: the relay (the pod template's own
    # program and arguments, run once by the command block) streams, and
    # halts on a poison row written meanwhile (events 1-50, the poison,
    # 51-99).
    own_argv=$(kp get "deployment/$rel-outbox-relay-app" <"$rendered" |
      jq -c '.spec.template.spec.containers[0] | .command + .args')
    poison=00000000-0000-4000-8000-0000000000bb
    ( wait_for 120 slot_active "$id" || exit 1
      write_events "$id" 1 50
      psql -q -v ON_ERROR_STOP=1 -c \
        "INSERT INTO $id VALUES ('$poison', 'order', NULL, 'OrderCreated', '{}')"
      write_events "$id" 51 99 ) &
    writer=$!
    echo "the relay halts: ARGV=$own_argv"
    run_blocks "$work/halt.out" "$own_argv" define command ||
      { cat "$work/halt.out" "$work/kubectl.err" 2>/dev/null; fail "the command block failed"; exit 1; }
    wait $writer || fail "writing the events and the poison row failed"
    grep -m1 'halting' "$work/halt.out" | cut -c1-240 | sed 's/^/  | /'
    code=$(grep -B1 '^pod "app-command" deleted$' "$work/halt.out" | head -1)
    [ "$code" = 4 ] || fail "the relay exited '$code' on the poison row, want 4"
    echo "  (exit $code: the relay halted on the poison row)"
    grep -q 'halting (outbox.on_invalid = halt)' "$work/halt.out" && grep -q "$poison" "$work/halt.out" ||
      fail "the relay's log does not name the poison event $poison and halt"

    # 2. A relay run with a flag (runbooks.md's exit 4): the relay block,
    # then (the slot holds the poison and events 51-99) the events are
    # published and the poison dead-lettered, then the relay-end block.
    echo "relay run: ARGV=$dead_argv"
    run_blocks "$work/relay-run.out" "$dead_argv" define relay ||
      { cat "$work/relay-run.out" "$work/kubectl.err" 2>/dev/null; fail "the relay block failed"; exit 1; }
    sed 's/^/  | /' "$work/relay-run.out"
    pod=app-once-$rel ctr=$(main_container "app-once-$rel")
    # (Its log read whole first: grep -q ending a pipe early fails it,
    # pipefail.)
    pm logs "$ctr" >"$work/once.log" 2>&1
    grep -q '"msg":"streaming".*"slot":"'"$id"'"' "$work/once.log" ||
      fail "the one-shot relay's log has no streaming line for slot $id"
    [ "$(pm inspect -f '{{.State.Status}}' "$ctr")" = running ] || fail "the one-shot relay is not running"
    is_200 "$oneshot_port" /activez || fail "the one-shot relay is not active: $(logs "$ctr")"
    last=$(write_last_event "$id" 100)
    wait_events "$topic" 100 || fail "$(distinct_in_topic "$topic") of 100 events reached Kafka: $(logs "$ctr")"
    got=$(distinct_in_topic "$topic")
    [ "$got" = 100 ] || fail "the topic holds $got distinct events, want 100"
    dead_ids() { kcat -b "$BROKERS" -C -t "$dead" -e -q -f '%h\n' 2>/dev/null | grep -o "id=$poison" || true; }
    has_dead() { [ -n "$(dead_ids)" ]; }
    wait_for 120 has_dead || fail "event $poison not in the dead-letter topic $dead"
    # What the runbook says to wait for: `dead-lettering invalid ...` for it.
    pm logs "$ctr" >"$work/once.log" 2>&1
    grep -q "dead-lettering invalid.*$poison" "$work/once.log" ||
      fail "no 'dead-lettering invalid' line naming $poison: $(logs "$ctr")"
    grep -m1 'dead-lettering invalid' "$work/once.log" | cut -c1-200 | sed 's/^/  /' || true
    run_blocks "$work/relay-end.out" "$dead_argv" define relay-end ||
      { cat "$work/relay-end.out"; fail "the relay-end block failed"; }
    sed 's/^/  | /' "$work/relay-end.out"
    read -r _ code took < <(grep '^pod/app-once ' "$work/deleted")
    [ "$code" = 0 ] || fail "the one-shot relay exited '$code' on delete, want 0"
    [ "$took" -lt "$grace" ] || fail "the one-shot relay took $took s to stop, grace period $grace s"
    echo "  (the one-shot relay drained and exited $code in $took s, grace period $grace s)"
    ! pm pod exists "$pod" || fail "pod $pod still exists after the relay-end block"
    scaled=$(cat "$work/scaled" 2>/dev/null | tr '\n' ' ')
    [ "$scaled" = "0 $replicas " ] || fail "the workload was scaled to '$scaled', want 0 then $replicas"
    confirmed=$(slot_confirmed "$id")
    if [ -z "$confirmed" ]; then
      fail "slot $id missing after the one-shot relay"
    elif ! lsn_at_least "$confirmed" "$last"; then
      fail "slot confirmed to $confirmed, before the last event ($last)"
    fi

    # 1. A command beside nothing: the runbooks' status ARGV, the command
    # block as printed (it prints the logs, then the exit code).
    echo "command: ARGV=$status_argv"
    run_blocks "$work/command.out" "$status_argv" define command ||
      { cat "$work/command.out" "$work/kubectl.err" 2>/dev/null; fail "the command block failed"; }
    sed 's/^/  | /' "$work/command.out"
    # The block prints the exit code just before `pod "..." deleted`.
    code=$(grep -B1 '^pod "app-command" deleted$' "$work/command.out" | head -1)
    [ "$code" = 0 ] || fail "status exited '$code', want 0"
    grep -Eq "^slot +$id\$" "$work/command.out" || fail "status does not name the slot $id"
    grep -Eq "^confirmed_flush_lsn +$confirmed\$" "$work/command.out" ||
      fail "status does not print the slot's position $confirmed"
    grep -Eq "^active +false\$" "$work/command.out" || fail "status: the slot is not inactive"
    ! pm pod exists "app-command-$rel" || fail "pod app-command-$rel still exists after the command block"
    # Each Pod ran once: podman's restart policy of its container is the
    # Pod's restartPolicy Never ("no"; Always would restart it at once).
    while read -r p policy; do
      [ "$policy" = no ] || fail "pod $p: podman restart policy '$policy', want no (restartPolicy Never)"
    done <"$work/restart-policy"
    [ "$(wc -l <"$work/restart-policy")" = 3 ] || fail "$(wc -l <"$work/restart-policy") Pods applied, want 3"
    echo "oneshot: $((SECONDS - start)) s from the first kubectl to the last"
    finish "the docs' one-shot Pods ran: a relay run with on_invalid=dead_letter, the status command" ;;

  *) die "unknown phase $phase" ;;
esac
