{{/* Chart name, release-scoped full name, labels. */}}
{{- define "outbox-relay.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "outbox-relay.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* relay | poller, checked. */}}
{{- define "outbox-relay.component" -}}
{{- if not (has .Values.mode (list "relay" "poller")) -}}
{{- fail (printf "mode must be relay or poller, not %q" .Values.mode) -}}
{{- end -}}
{{- .Values.mode -}}
{{- end -}}

{{/* Labels shared by every object of the release. */}}
{{- define "outbox-relay.selectorLabels" -}}
app.kubernetes.io/name: {{ include "outbox-relay.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "outbox-relay.labels" -}}
{{ include "outbox-relay.selectorLabels" . }}
app.kubernetes.io/component: {{ include "outbox-relay.component" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Per database: call with (dict "root" $ "db" $db). */}}
{{- define "outbox-relay.dbName" -}}
{{- $n := required "every databases[] entry needs a name" .db.name -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $n) -}}
{{- fail (printf "databases[].name %q: lowercase letters, digits and '-' only" $n) -}}
{{- end -}}
{{- printf "%s-%s" (include "outbox-relay.fullname" .root | trunc 40 | trimSuffix "-") $n | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{- define "outbox-relay.dbSelectorLabels" -}}
{{ include "outbox-relay.selectorLabels" .root }}
outbox-relay/database: {{ .db.name }}
{{- end -}}

{{- define "outbox-relay.dbLabels" -}}
{{ include "outbox-relay.labels" .root }}
outbox-relay/database: {{ .db.name }}
{{- end -}}

{{/* The relay YAML of one database, as a dict. */}}
{{- define "outbox-relay.dbConfig" -}}
{{- $root := .root -}}
{{- $cfg := mustMergeOverwrite (deepCopy $root.Values.config) (deepCopy (default dict .db.config)) -}}
{{- $pg := default dict $cfg.postgres -}}
{{- if .db.conninfo }}{{ $_ := set $pg "conninfo" .db.conninfo }}{{ end -}}
{{- $_ := set $pg "slot" (default "outbox_relay" .db.slot) -}}
{{- /* The relay's identity, keying its slot marker in kafka.state_topic
       (postgres.slot_marker kafka): unique per database entry of the release,
       and unchanged by anything the server goes through. */ -}}
{{- if not $pg.slot_marker_id -}}
{{- $_ := set $pg "slot_marker_id" (printf "%s/%s/%s" $root.Release.Namespace $root.Release.Name .db.name) -}}
{{- end -}}
{{- if $root.Values.persistence.enabled -}}
{{- $_ := set $pg "state_dir" $root.Values.persistence.mountPath -}}
{{- else if and (eq $root.Values.mode "relay") (ne (toString (default "file" $pg.slot_marker)) "kafka") -}}
{{- fail (printf "database %s: postgres.slot_marker %q keeps the slot marker on the pod's disk, which a rescheduled pod loses; set postgres.slot_marker kafka or persistence.enabled true" .db.name (toString (default "file" $pg.slot_marker))) -}}
{{- end -}}
{{- $_ := set $cfg "postgres" $pg -}}
{{- $http := default dict $cfg.http -}}
{{- $_ := set $http "listen" (printf "0.0.0.0:%d" (int $root.Values.http.port)) -}}
{{- $_ := set $cfg "http" $http -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* terminationGracePeriodSeconds of one database's pods. */}}
{{- define "outbox-relay.gracePeriod" -}}
{{- $cfg := include "outbox-relay.dbConfig" . | fromYaml -}}
{{- $kafka := default dict $cfg.kafka -}}
{{- $flushS := div (add (int (default 30000 $kafka.flush_timeout_ms)) 999) 1000 -}}
{{- $grace := .root.Values.terminationGracePeriodSeconds -}}
{{- if eq (toString $grace) "" -}}
{{- add $flushS (int .root.Values.terminationGraceMarginSeconds) -}}
{{- else if le (int $grace) (int $flushS) -}}
{{- fail (printf "terminationGracePeriodSeconds %v must exceed kafka.flush_timeout_ms (%d s) of database %s, or Kubernetes kills the relay while it flushes" $grace $flushS .db.name) -}}
{{- else -}}
{{- int $grace -}}
{{- end -}}
{{- end -}}

{{- define "outbox-relay.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "outbox-relay.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "outbox-relay.secretName" -}}
{{- if .Values.secret.existingSecret -}}
{{- .Values.secret.existingSecret -}}
{{- else if .Values.secret.stringData -}}
{{- include "outbox-relay.fullname" . -}}
{{- end -}}
{{- end -}}

{{- define "outbox-relay.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The env and envFrom of a database's containers (the relay or poller,
   and the validate init container): the same environment, so validate
   expands the same ${VAR}s. Context: dict "root" $ "db" $db. */}}
{{- define "outbox-relay.containerEnv" -}}
{{- $secretName := include "outbox-relay.secretName" .root -}}
{{- if or .root.Values.env .root.Values.extraEnv .db.env }}
env:
  {{- with .root.Values.env }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with .root.Values.extraEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with .db.env }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
{{- if or $secretName .db.existingSecret }}
# Each key becomes an environment variable, named as ${KEY} in the relay
# YAML.
envFrom:
  {{- with $secretName }}
  - secretRef:
      name: {{ . }}
  {{- end }}
  {{- with .db.existingSecret }}
  - secretRef:
      name: {{ . }}
  {{- end }}
{{- end }}
{{- end }}
