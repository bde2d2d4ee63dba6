{{/*
Named templates of the siglake compactor sidecar. Every template takes this chart's context: in
this chart that is `.`; in an ingest chart that depends on this one it is
`(index .Subcharts "siglake-compactor")`, so the sidecar sees its own values, name and version.
*/}}

{{- define "siglake-compactor.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "siglake-compactor.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "siglake-compactor.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "siglake-compactor.selectorLabels" -}}
app.kubernetes.io/name: {{ include "siglake-compactor.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object's metadata: the chart and app versions, and commonLabels (the chart's
own labels win over a commonLabels key of the same name). */}}
{{- define "siglake-compactor.labels" -}}
{{- $own := include "siglake-compactor.selectorLabels" . | fromYaml }}
{{- $_ := set $own "helm.sh/chart" (include "siglake-compactor.chart" .) }}
{{- $_ := set $own "app.kubernetes.io/version" (.Chart.AppVersion | toString) }}
{{- $_ := set $own "app.kubernetes.io/managed-by" .Release.Service }}
{{- toYaml (merge $own (.Values.commonLabels | default dict)) }}
{{- end }}

{{/* Labels of the example pod template: no chart or app version, so a chart upgrade that changes
nothing else in the pod does not restart every ingest pod (a new image still does, through the
image field). commonLabels are here too; the selector labels win over them. */}}
{{- define "siglake-compactor.podLabels" -}}
{{- $own := include "siglake-compactor.selectorLabels" . | fromYaml }}
{{- $_ := set $own "app.kubernetes.io/managed-by" .Release.Service }}
{{- toYaml (merge $own (.Values.commonLabels | default dict)) }}
{{- end }}

{{/* The ServiceAccount the pods run as: serviceAccount.name, else <fullname> when the chart
creates it; without either, example.serviceAccountName (older values) or "" for the namespace's
default. An ingest chart sets its pods' serviceAccountName from this. */}}
{{- define "siglake-compactor.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "siglake-compactor.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default .Values.example.serviceAccountName .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Pull secrets as a list of {name}: imagePullSecrets and global.imagePullSecrets, each entry a
name or a {name: ...} object; "" when there are none. */}}
{{- define "siglake-compactor.imagePullSecrets" -}}
{{- $out := list }}
{{- range concat (.Values.imagePullSecrets | default list) (dig "imagePullSecrets" list (.Values.global | default dict)) }}
{{- $n := "" }}
{{- if kindIs "string" . }}{{ $n = . }}{{ else if kindIs "map" . }}{{ $n = dig "name" "" . }}{{ end }}
{{- if and $n (not (has (dict "name" $n) $out)) }}{{ $out = append $out (dict "name" $n) }}{{ end }}
{{- end }}
{{- with $out }}{{ toYaml . }}{{ end }}
{{- end }}

{{/* An image repository with global.image.registry in place of its registry host (the first path
element when it has a dot or a colon, or is localhost, as Docker reads it), or in front of a
repository without one. Takes a dict: "chart" (this chart's context), "repository". */}}
{{- define "siglake-compactor.repository" -}}
{{- $repo := .repository }}
{{- with dig "image" "registry" "" (.chart.Values.global | default dict) }}
{{- $parts := splitList "/" $repo }}
{{- $host := first $parts }}
{{- if and (gt (len $parts) 1) (or (contains "." $host) (contains ":" $host) (eq $host "localhost")) }}
{{- $repo = join "/" (rest $parts) }}
{{- end }}
{{- $repo = printf "%s/%s" (trimSuffix "/" .) $repo }}
{{- end }}
{{- $repo }}
{{- end }}

{{/* Pod labels that the gossip Service and the PodMonitor select. */}}
{{- define "siglake-compactor.podSelector" -}}
{{- if .Values.gossip.service.selector }}
{{- toYaml .Values.gossip.service.selector }}
{{- else if .Values.example.enabled }}
{{- include "siglake-compactor.selectorLabels" . }}
{{- else }}
{{- fail "gossip.service.selector must name the ingest pods' labels when example.enabled is false" }}
{{- end }}
{{- end }}

{{- define "siglake-compactor.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- $repo := include "siglake-compactor.repository" (dict "chart" . "repository" .Values.image.repository) }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repo .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repo $tag }}
{{- end }}
{{- end }}

{{- define "siglake-compactor.headlessService" -}}
{{- printf "%s-headless" (include "siglake-compactor.fullname" . | trunc 54 | trimSuffix "-") }}
{{- end }}

{{/* Join list: the value, else the headless Service's DNS name (it resolves to every pod IP). */}}
{{- define "siglake-compactor.gossipJoin" -}}
{{- if .Values.gossip.join }}
{{- .Values.gossip.join }}
{{- else if .Values.gossip.service.enabled }}
{{- printf "%s.%s.svc:%d" (include "siglake-compactor.headlessService" .) .Release.Namespace (int .Values.gossip.port) }}
{{- end }}
{{- end }}

{{/* "true" when the embedded catalog or a local warehouse needs the data volume. */}}
{{- define "siglake-compactor.localData" -}}
{{- $uri := .Values.catalog.uri }}
{{- if .Values.catalog.existingSecret }}{{ $uri = "" }}{{ end }}
{{- $wh := .Values.warehouse.uri }}
{{- if or (hasPrefix "sqlite:" $uri) (not (contains "://" $wh)) (hasPrefix "file://" $wh) }}true{{ end }}
{{- end }}

{{/* Fails the render when several pods would run the sidecar on per-pod storage. A table's
maintenance owner is picked among the members that share one catalog: with the embedded catalog
(sqlite:) every pod has a private catalog, and with a local warehouse every pod's data files are on
its own volume, so several such pods are unrelated lakes, not one. Takes a dict: "chart" (this
chart's context) and "replicas" (the pod count), plus "value" (the name of the replica setting, for
the message). */}}
{{- define "siglake-compactor.requireSharedLake" -}}
{{- $v := .chart.Values }}
{{- $n := int .replicas }}
{{- if gt $n 1 }}
{{- $why := list }}
{{- if and (not $v.catalog.existingSecret) (hasPrefix "sqlite:" $v.catalog.uri) }}
{{- $why = append $why (printf "catalog.uri %q is the embedded SQLite catalog, private to each pod" $v.catalog.uri) }}
{{- end }}
{{- if or (not (contains "://" $v.warehouse.uri)) (hasPrefix "file://" $v.warehouse.uri) }}
{{- $why = append $why (printf "warehouse.uri %q is a local path, on each pod's own volume" $v.warehouse.uri) }}
{{- end }}
{{- if $why }}
{{- fail (printf "%s is %d, but %s: the %d pods would be %d unrelated lakes (a table's maintenance owner is picked among members sharing one catalog). Set a shared catalog (catalog.uri postgres://... or rest+https://..., or catalog.existingSecret) and an s3:// warehouse.uri, or set %s: 1." .value $n (join ", and " $why) $n $n .value) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Environment of the sidecar container: the chart's variables, minus those extraEnv names (so
extraEnv overrides without duplicate names, which would break upgrade patches), then extraEnv. */}}
{{- define "siglake-compactor.env" -}}
{{- $extra := .Values.extraEnv | default list }}
{{- $names := list }}
{{- range $extra }}{{ $names = append $names .name }}{{ end }}
{{- $out := list }}
{{- range (include "siglake-compactor.baseEnv" . | fromYamlArray) }}
{{- if not (has .name $names) }}{{ $out = append $out . }}{{ end }}
{{- end }}
{{- toYaml (concat $out $extra) }}
{{- end }}

{{/* The chart's own variables. Every SIGLAKE_* name is an option of `siglake compactor`
(docs/configuration.md); POD_IP feeds SIGLAKE_GOSSIP_ADVERTISE and, without gossip, the
address group commit's committer claims advertise (--peer-advertise's default). */}}
{{- define "siglake-compactor.baseEnv" -}}
{{- $v := .Values }}
- name: SIGLAKE_NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- with include "siglake-compactor.goMemLimit" . }}
- name: GOMEMLIMIT
  value: {{ . | quote }}
{{- end }}
- name: SIGLAKE_COMPACTOR_ROLE
  value: {{ $v.compactor.role | quote }}
- name: SIGLAKE_WAL_DIR
  value: {{ $v.wal.mountPath | quote }}
{{- if $v.catalog.existingSecret }}
- name: SIGLAKE_CATALOG
  valueFrom:
    secretKeyRef:
      name: {{ $v.catalog.existingSecret | quote }}
      key: {{ $v.catalog.existingSecretKey | quote }}
{{- else }}
- name: SIGLAKE_CATALOG
  value: {{ $v.catalog.uri | quote }}
{{- end }}
- name: SIGLAKE_NAMESPACE
  value: {{ $v.catalog.namespace | quote }}
- name: SIGLAKE_WAREHOUSE
  value: {{ $v.warehouse.uri | quote }}
{{- if hasPrefix "s3://" $v.warehouse.uri }}
{{- with $v.warehouse.s3.endpoint }}
- name: SIGLAKE_S3_ENDPOINT
  value: {{ . | quote }}
{{- end }}
- name: SIGLAKE_S3_REGION
  value: {{ $v.warehouse.s3.region | quote }}
- name: SIGLAKE_S3_PATH_STYLE
  value: {{ $v.warehouse.s3.pathStyle | quote }}
{{- end }}
{{- with $v.warehouse.s3.existingSecret }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ . | quote }}
      key: {{ $v.warehouse.s3.accessKeyIdKey | quote }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ . | quote }}
      key: {{ $v.warehouse.s3.secretAccessKeyKey | quote }}
{{- end }}
- name: SIGLAKE_HTTP_ADDR
  value: {{ printf "0.0.0.0:%d" (int $v.http.port) | quote }}
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
{{- /* The key signs group commit's hand-offs over HTTP too where gossip is off and catalog
     claims elect the committers (docs/group-commit.md). */}}
{{- with include "siglake-compactor.gossipKeySecret" . }}
- name: SIGLAKE_GOSSIP_KEY_FILE
  value: {{ printf "/etc/siglake/gossip/%s" (include "siglake-compactor.gossipKeyItem" $) | quote }}
{{- end }}
{{- if $v.gossip.enabled }}
- name: SIGLAKE_GOSSIP_BIND
  value: {{ printf "0.0.0.0:%d" (int $v.gossip.port) | quote }}
- name: SIGLAKE_GOSSIP_ADVERTISE
  value: {{ printf "$(POD_IP):%d" (int $v.gossip.port) | quote }}
{{- with $v.gossip.clusterLabel }}
- name: SIGLAKE_GOSSIP_CLUSTER_LABEL
  value: {{ . | quote }}
{{- end }}
{{- with include "siglake-compactor.gossipKeySecret" . }}
{{- with $v.gossip.keyMigration }}
- name: SIGLAKE_GOSSIP_KEY_MIGRATION
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- /* The schema refuses values other than accept and send, and so does the binary (the bounds test
     renders without the schema to check that): the template checks only what neither can see. */}}
{{- with $v.gossip.keyMigration }}
{{- if not (include "siglake-compactor.gossipKeySecret" $) }}
{{- fail "gossip.keyMigration needs a key: gossip.keySecret.name or gossip.key" }}
{{- end }}
{{- end }}
{{- with include "siglake-compactor.gossipJoin" . }}
- name: SIGLAKE_GOSSIP_JOIN
  value: {{ . | quote }}
{{- end }}
{{- end }}
- name: SIGLAKE_WAL_SEGMENT_MAX_MB
  value: {{ $v.wal.segmentMaxMb | int | quote }}
- name: SIGLAKE_COMMIT_BATCH_TARGET_MB
  value: {{ $v.commitBatch.targetMb | int | quote }}
- name: SIGLAKE_COMMIT_BATCH_MAX_AGE_SECS
  value: {{ $v.commitBatch.maxAgeSecs | int | quote }}
{{- with $v.commitBatch.groupCommit }}
- name: SIGLAKE_GROUP_COMMIT
  value: {{ .enabled | quote }}
- name: SIGLAKE_GROUP_COMMIT_INTERVAL
  value: {{ .interval | quote }}
- name: SIGLAKE_GROUP_COMMIT_MAX_WAIT
  value: {{ .maxWait | toString | quote }}
- name: SIGLAKE_GROUP_COMMIT_TARGET_MB
  value: {{ .targetMb | int | quote }}
- name: SIGLAKE_GROUP_COMMIT_MAX_FILES
  value: {{ .maxFiles | int | quote }}
- name: SIGLAKE_GROUP_COMMIT_QUEUE_MAX
  value: {{ .queueMax | int | quote }}
- name: SIGLAKE_GROUP_COMMIT_FALLBACK_AFTER
  value: {{ .fallbackAfter | quote }}
{{- end }}
- name: SIGLAKE_MANIFEST_MERGE_MIN_COUNT
  value: {{ $v.compactor.manifestMerge.minCount | int | quote }}
{{- with $v.compactor.binLeases }}
- name: SIGLAKE_BIN_LEASES
  value: {{ .enabled | quote }}
- name: SIGLAKE_BIN_LEASE_DURATION
  value: {{ .duration | toString | quote }}
- name: SIGLAKE_BIN_LEASE_OWNER_WAIT
  value: {{ .ownerWait | toString | quote }}
{{- end }}
- name: SIGLAKE_MARK_PRUNE_AFTER
  value: {{ $v.compactor.markPruneAfter | toString | quote }}
- name: SIGLAKE_RECLUSTER_INTERVAL_SECS
  value: {{ $v.compactor.reclusterIntervalSecs | int | quote }}
- name: SIGLAKE_COMPACTOR_LEVELED
  value: {{ $v.compactor.leveled | quote }}
- name: SIGLAKE_COMPACTOR_MAX_OVERLAP_DEPTH
  value: {{ $v.compactor.maxOverlapDepth | int | quote }}
- name: SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER
  value: {{ $v.compactor.maxSealedForRecluster | int | quote }}
- name: SIGLAKE_COMPACTOR_BACKPRESSURE_COMPACT_EVERY
  value: {{ $v.compactor.backpressureCompactEvery | int | quote }}
- name: SIGLAKE_COMPACTOR_LEVEL_MAX_GEN
  value: {{ $v.compactor.levelMaxGen | int | quote }}
- name: SIGLAKE_COMPACTOR_SPLIT_SPARSE
  value: {{ $v.compactor.splitSparse | toString | quote }}
- name: SIGLAKE_COMPACTOR_MAX_FANIN
  value: {{ $v.compactor.maxFanIn | int | quote }}
- name: SIGLAKE_MERGE_PARQUET_ENCODER
  value: {{ $v.compactor.mergeParquetEncoder | quote }}
- name: SIGLAKE_MERGE_PARQUET_DECODER
  value: {{ $v.compactor.mergeParquetDecoder | quote }}
- name: SIGLAKE_SNAPSHOT_EXPIRE_INTERVAL_SECS
  value: {{ $v.snapshotExpire.intervalSecs | int | quote }}
- name: SIGLAKE_SNAPSHOT_RETAIN
  value: {{ $v.snapshotExpire.retain | int | quote }}
- name: SIGLAKE_INDEX_FOOTER_MAX_BYTES
  value: {{ $v.compactor.indexFooterMaxBytes | int64 | quote }}
- name: SIGLAKE_INVERTED_INDEX
  value: {{ $v.compactor.invertedIndex.enabled | quote }}
- name: SIGLAKE_INDEX_REBUILD
  value: {{ $v.compactor.indexRebuild | quote }}
{{- if not $v.compactor.deleteTasks }}
- name: SIGLAKE_DELETE_TASKS
  value: "0"
{{- end }}
- name: SIGLAKE_DELETE_CANCEL_PERIOD
  value: {{ $v.compactor.deleteCancelPeriod | quote }}
- name: SIGLAKE_CATALOG_CLAIM
  value: {{ $v.compactor.catalogClaim | quote }}
- name: SIGLAKE_COMMIT_TIMEOUT
  value: {{ $v.compactor.commitTimeout | quote }}
- name: SIGLAKE_RETENTION_PERIOD
  value: {{ $v.compactor.retention.period | quote }}
- name: SIGLAKE_RETENTION_INTERVAL_SECS
  value: {{ $v.compactor.retention.intervalSecs | int | quote }}
- name: SIGLAKE_RETENTION_DELETE_DELAY
  value: {{ $v.compactor.retention.deleteDelay | quote }}
{{- with $v.compactor.walBuffer }}
{{- if .enabled }}
- name: SIGLAKE_BUFFER_ADDR
  {{- /* An IPv6 bind (::1, ::) needs brackets before the port, or the binary refuses it. */}}
  {{- $host := .bind }}
  {{- if and (contains ":" $host) (not (hasPrefix "[" $host)) }}{{ $host = printf "[%s]" $host }}{{ end }}
  value: {{ printf "%s:%d" $host (int .port) | quote }}
{{- with include "siglake-compactor.bufferTokenSecret" $ }}
- name: SIGLAKE_BUFFER_TOKEN_FILE
  value: {{ printf "/etc/siglake/buffer-token/%s" (include "siglake-compactor.bufferTokenItem" $) | quote }}
{{- end }}
{{- if .tls.secretName }}
- name: SIGLAKE_BUFFER_TLS_CERT_FILE
  value: "/etc/siglake/buffer-tls/tls.crt"
- name: SIGLAKE_BUFFER_TLS_KEY_FILE
  value: "/etc/siglake/buffer-tls/tls.key"
{{- /* For siglake tail in the pod: it dials https://127.0.0.1 and checks the name against ca.crt. */}}
- name: SIGLAKE_BUFFER_TLS_CA_FILE
  value: "/etc/siglake/buffer-tls/ca.crt"
{{- if .tls.clientCA }}
- name: SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE
  value: "/etc/siglake/buffer-tls/ca.crt"
{{- end }}
{{- else if .tls.clientCA }}
{{- fail "compactor.walBuffer.tls.clientCA needs compactor.walBuffer.tls.secretName: a Secret of type kubernetes.io/tls whose ca.crt signs the readers' client certificates" }}
{{- end }}
{{- if .insecureNoAuth }}
- name: SIGLAKE_BUFFER_INSECURE_NO_AUTH
  value: "true"
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* GOMEMLIMIT in bytes: goMemLimitRatio of resources.limits.memory, rounded down; nothing
without a memory limit or with the ratio 0. */}}
{{- define "siglake-compactor.goMemLimit" -}}
{{- $limit := dig "limits" "memory" "" (.Values.resources | default dict) }}
{{- $ratio := float64 (.Values.goMemLimitRatio | default 0) }}
{{- if and $limit (gt $ratio 0.0) }}
{{- mulf (include "siglake-compactor.quantityBytes" $limit) $ratio | floor | int64 }}
{{- end }}
{{- end }}

{{/* A Kubernetes quantity (512Mi, 1.5Gi, 2G, 1e9, or a number of bytes) in bytes, as a number
without a fraction where it has none. */}}
{{- define "siglake-compactor.quantityBytes" -}}
{{- if or (kindIs "float64" .) (kindIs "int64" .) (kindIs "int" .) }}
{{- . | float64 }}
{{- else }}
{{- $q := toString . }}
{{- $m := regexFindAll "^([0-9]+(?:\\.[0-9]+)?(?:[eE][0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E|m)?$" $q 1 }}
{{- if not $m }}
{{- fail (printf "resources.limits.memory %q is not a Kubernetes quantity (e.g. 512Mi, 1Gi, 2G)" $q) }}
{{- end }}
{{- $units := dict "" 1.0 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 "m" 1e-3 }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?([eE][0-9]+)?" $q }}
{{- mulf $number (index $units (trimPrefix $number $q)) }}
{{- end }}
{{- end }}

{{/* The sidecar's volume mounts. */}}
{{- define "siglake-compactor.volumeMounts" -}}
- name: {{ .Values.wal.volumeName }}
  mountPath: {{ .Values.wal.mountPath }}
{{- if include "siglake-compactor.localData" . }}
- name: {{ .Values.data.volumeName }}
  mountPath: {{ .Values.data.mountPath }}
{{- end }}
- name: siglake-tmp
  mountPath: /tmp
{{- if include "siglake-compactor.gossipKeySecret" . }}
- name: siglake-gossip-key
  mountPath: /etc/siglake/gossip
  readOnly: true
{{- end }}
{{- if include "siglake-compactor.bufferTokenSecret" . }}
- name: siglake-buffer-token
  mountPath: /etc/siglake/buffer-token
  readOnly: true
{{- end }}
{{- if include "siglake-compactor.bufferTLS" . }}
- name: siglake-buffer-tls
  mountPath: /etc/siglake/buffer-tls
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The WAL mount for the ingest container: it writes segments where the sidecar reads them. */}}
{{- define "siglake-compactor.ingestVolumeMount" -}}
- name: {{ .Values.wal.volumeName }}
  mountPath: {{ .Values.wal.mountPath }}
{{- end }}

{{- define "siglake-compactor.tmpVolume" -}}
- name: siglake-tmp
  emptyDir:
    sizeLimit: 256Mi
{{- end }}

{{/* Pod volumes the sidecar brings: scratch space and, for the embedded catalog or a local
warehouse, an emptyDir data volume (give it a PVC instead to keep tables across restarts). The
WAL volume belongs to the ingest pod. */}}
{{- define "siglake-compactor.volumes" -}}
{{ include "siglake-compactor.tmpVolume" . }}
{{- if include "siglake-compactor.localData" . }}
- name: {{ .Values.data.volumeName }}
  emptyDir: {}
{{- end }}
{{- with include "siglake-compactor.gossipKeyVolume" . }}
{{ . }}
{{- end }}
{{- with include "siglake-compactor.bufferVolumes" . }}
{{ . }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Container ports: HTTP, and gossip on TCP and (unless gossip.udp is false) UDP. */}}
{{- define "siglake-compactor.ports" -}}
- name: siglake-http
  containerPort: {{ .Values.http.port }}
  protocol: TCP
{{- if include "siglake-compactor.bufferBeyondPod" . }}
- name: siglake-buffer
  containerPort: {{ .Values.compactor.walBuffer.port }}
  protocol: TCP
{{- end }}
{{- if .Values.gossip.enabled }}
- name: siglake-tcp
  containerPort: {{ .Values.gossip.port }}
  protocol: TCP
{{- if .Values.gossip.udp }}
- name: siglake-udp
  containerPort: {{ .Values.gossip.port }}
  protocol: UDP
{{- end }}
{{- end }}
{{- end }}

{{/* The label the Grafana charts (Loki, Tempo, Mimir) put on the members of a memberlist
cluster: on the example pods and the gossip Service. */}}
{{- define "siglake-compactor.memberlistLabels" -}}
app.kubernetes.io/part-of: memberlist
{{- end }}

{{/* The sidecar's probes: a full probe object (livenessProbe, readinessProbe, startupProbe)
wins; otherwise the defaults of probes.liveness and probes.readiness. */}}
{{- define "siglake-compactor.probes" -}}
{{- with .Values.livenessProbe }}
livenessProbe:
  {{- toYaml . | nindent 2 }}
{{- else }}
{{- with .Values.probes.liveness }}
{{- if .enabled }}
livenessProbe:
  httpGet:
    path: /healthz
    port: siglake-http
  initialDelaySeconds: {{ .initialDelaySeconds }}
  periodSeconds: {{ .periodSeconds }}
  timeoutSeconds: {{ .timeoutSeconds }}
  failureThreshold: {{ .failureThreshold }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.readinessProbe }}
readinessProbe:
  {{- toYaml . | nindent 2 }}
{{- else }}
{{- with .Values.probes.readiness }}
{{- if .enabled }}
readinessProbe:
  httpGet:
    path: /readyz
    port: siglake-http
  periodSeconds: {{ .periodSeconds }}
  timeoutSeconds: {{ .timeoutSeconds }}
  failureThreshold: {{ .failureThreshold }}
{{- end }}
{{- end }}
{{- end }}
{{- with .Values.startupProbe }}
startupProbe:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The sidecar container, for an ingest pod's `containers:` list. */}}
{{- define "siglake-compactor.sidecar" -}}
- name: siglake-compactor
  image: {{ include "siglake-compactor.image" . | quote }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args:
    - compactor
    {{- with .Values.extraArgs }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  ports:
    {{- include "siglake-compactor.ports" . | nindent 4 }}
  env:
    {{- include "siglake-compactor.env" . | nindent 4 }}
  {{- with .Values.extraEnvFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    {{- include "siglake-compactor.volumeMounts" . | nindent 4 }}
  {{- with include "siglake-compactor.probes" . | trim }}
  {{- . | nindent 2 }}
  {{- end }}
  {{- with .Values.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* "true" when the prometheus-operator objects render: the cluster reports the
monitoring.coreos.com/v1 API (helm template: --api-versions monitoring.coreos.com/v1), or
metrics.forceMonitoringApi. */}}
{{- define "siglake-compactor.monitoringApi" -}}
{{- if or .Values.metrics.forceMonitoringApi (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1") }}true{{ end }}
{{- end }}

{{/* Fails the render when a prometheus-operator object is enabled but the API is missing: leaving
it out would drop the scrape or the alerts without a word (install notes are not shown by helm
template or GitOps tools). Takes a dict: "chart" (this chart's context), "value" (the enabling
value), "kind". */}}
{{- define "siglake-compactor.requireMonitoringApi" -}}
{{- if not (include "siglake-compactor.monitoringApi" .chart) }}
{{- fail (printf "%s is true, but the cluster does not report the monitoring.coreos.com/v1 API (prometheus-operator's CRDs), so the %s would not be created. Install the operator's CRDs first, or render offline with --api-versions monitoring.coreos.com/v1 or metrics.forceMonitoringApi=true, or set %s=false." .value .kind .value) }}
{{- end }}
{{- end }}

{{/* Fails the render when more than one way of scraping the sidecars is on: the scrape
annotations, the ServiceMonitor and the PodMonitor each scrape every pod, so two of them would
scrape each pod twice (every series twice, sums and rates doubled). */}}
{{- define "siglake-compactor.checkScrape" -}}
{{- $m := .Values.metrics }}
{{- $on := list }}
{{- if $m.scrapeAnnotations }}{{ $on = append $on "metrics.scrapeAnnotations" }}{{ end }}
{{- if $m.serviceMonitor.enabled }}{{ $on = append $on "metrics.serviceMonitor.enabled" }}{{ end }}
{{- if $m.podMonitor.enabled }}{{ $on = append $on "metrics.podMonitor.enabled" }}{{ end }}
{{- if gt (len $on) 1 }}
{{- fail (printf "%s are on together: each scrapes every sidecar, so every pod would be scraped %d times (each series duplicated, sums and rates multiplied). Keep one and set the others false (with a prometheus-operator Prometheus: metrics.scrapeAnnotations=false)." (join " and " $on) (len $on)) }}
{{- end }}
{{- end }}

{{/* One scrape endpoint of the ServiceMonitor or PodMonitor (the dict's "v" is its values). */}}
{{- define "siglake-compactor.scrapeEndpoint" -}}
{{- $v := .v -}}
- port: siglake-http
  path: /metrics
  interval: {{ $v.interval }}
  {{- with $v.scrapeTimeout }}
  scrapeTimeout: {{ . }}
  {{- end }}
  {{- with $v.scheme }}
  scheme: {{ . }}
  {{- end }}
  {{- with $v.tlsConfig }}
  tlsConfig:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.relabelings }}
  relabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.metricRelabelings }}
  metricRelabelings:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* The namespaceSelector of a monitor: the value, else the release's namespace. */}}
{{- define "siglake-compactor.namespaceSelector" -}}
{{- with .v.namespaceSelector }}
{{- toYaml . }}
{{- else }}
matchNames:
  - {{ .ns }}
{{- end }}
{{- end }}

{{/* Scrape annotations for the pod template (Prometheus' kubernetes-pods convention). */}}
{{- define "siglake-compactor.scrapeAnnotations" -}}
{{- if .Values.metrics.scrapeAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ .Values.http.port | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end }}

{{/* The Secret holding the gossip key file, "" when gossip is off or runs without a key;
gossip.keySecret.name wins over gossip.key. With
gossip on and neither gossip.keySecret.name nor gossip.key, rendering fails unless
gossip.insecureNoKey: without a key any process that reaches the port joins (docs/gossip.md). */}}
{{- define "siglake-compactor.gossipKeySecret" -}}
{{- $g := .Values.gossip }}
{{- if or $g.enabled .Values.compactor.catalogClaim }}
{{- if $g.keySecret.name }}
{{- $g.keySecret.name }}
{{- else if $g.key }}
{{- printf "%s-gossip" (include "siglake-compactor.fullname" .) }}
{{- else if and $g.enabled (not $g.insecureNoKey) }}
{{- fail "gossip is on without an encryption key, so any process that reaches the gossip port could join and take table leases. Create a Secret once and name it: kubectl create secret generic siglake-gossip --from-literal=keys=$(head -c 32 /dev/urandom | base64), then --set gossip.keySecret.name=siglake-gossip (a key given with --set gossip.key must be the same on every upgrade: keep it in your values file or use --reuse-values). A release that ran without a key adds one in steps (gossip.keyMigration, docs/operations.md \"Gossip key\"); gossip.insecureNoKey=true runs without one (test clusters only). docs/gossip.md" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The pod volume of the gossip key Secret, "" without one. */}}
{{- define "siglake-compactor.gossipKeyVolume" -}}
{{- with include "siglake-compactor.gossipKeySecret" . }}
- name: siglake-gossip-key
  secret:
    secretName: {{ . | quote }}
    {{- /* 0444: Secret files are root's and the image runs as uid 65532, so a pod without fsGroup
    could not read 0400; the key's secrecy is the Secret's RBAC and the pod boundary. */}}
    defaultMode: 0444
{{- end }}
{{- end }}

{{/* The key file's name in the mounted Secret. */}}
{{- define "siglake-compactor.gossipKeyItem" -}}
{{- if .Values.gossip.keySecret.name }}{{ .Values.gossip.keySecret.key }}{{ else }}keys{{ end }}
{{- end }}


{{/* One NetworkPolicy peer from {namespaceSelector, podSelector} (both: pods matching both);
nothing when both are empty. */}}
{{- define "siglake-compactor.networkPolicyPeer" -}}
{{- $peer := dict }}
{{- with .namespaceSelector }}{{ $_ := set $peer "namespaceSelector" . }}{{ end }}
{{- with .podSelector }}{{ $_ := set $peer "podSelector" . }}{{ end }}
{{- with $peer }}{{ toYaml (list .) }}{{ end }}
{{- end }}

{{/* "true" when the WAL buffer is on and bound beyond loopback, "" otherwise. */}}
{{- define "siglake-compactor.bufferBeyondPod" -}}
{{- $b := .Values.compactor.walBuffer }}
{{- if and $b.enabled (not (has $b.bind (list "127.0.0.1" "localhost" "::1" "[::1]"))) }}true{{ end }}
{{- end }}

{{/* The Secret holding the WAL buffer's token file, "" without one; tokenSecret.name wins over
token. With the buffer on beyond loopback and neither a token nor mutual TLS, rendering fails
unless insecureNoAuth: the buffer serves log rows to whoever reaches the port (docs/wal-buffer.md). */}}
{{- define "siglake-compactor.bufferTokenSecret" -}}
{{- $b := .Values.compactor.walBuffer }}
{{- if $b.enabled }}
{{- if $b.tokenSecret.name }}
{{- $b.tokenSecret.name }}
{{- else if $b.token }}
{{- printf "%s-buffer" (include "siglake-compactor.fullname" .) }}
{{- else if and (include "siglake-compactor.bufferBeyondPod" .) (not (and $b.tls.secretName $b.tls.clientCA)) (not $b.insecureNoAuth) }}
{{- fail "compactor.walBuffer is on beyond loopback without credentials, so anyone who reaches a pod could read its log rows. Create a token Secret once and name it: kubectl create secret generic siglake-buffer --from-literal=tokens=$(head -c 32 /dev/urandom | base64), then --set compactor.walBuffer.tokenSecret.name=siglake-buffer (readers send that token: siglake tail --buffer-token-file); add compactor.walBuffer.tls.secretName so the token crosses the network encrypted. Or mutual TLS (tls.secretName and tls.clientCA=true), or compactor.walBuffer.bind=127.0.0.1 for the pod's own containers only; compactor.walBuffer.insecureNoAuth=true serves without credentials (test clusters only). docs/wal-buffer.md" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The token file's name in the mounted Secret. */}}
{{- define "siglake-compactor.bufferTokenItem" -}}
{{- if .Values.compactor.walBuffer.tokenSecret.name }}{{ .Values.compactor.walBuffer.tokenSecret.key }}{{ else }}tokens{{ end }}
{{- end }}

{{/* The WAL buffer's TLS Secret, "" without one or with the buffer off. */}}
{{- define "siglake-compactor.bufferTLS" -}}
{{- if .Values.compactor.walBuffer.enabled }}{{ .Values.compactor.walBuffer.tls.secretName }}{{ end }}
{{- end }}

{{/* "true" when readers in other pods must authenticate: a token or mutual TLS. Only then does
the Service get the buffer's port. */}}
{{- define "siglake-compactor.bufferAuthenticated" -}}
{{- $b := .Values.compactor.walBuffer }}
{{- if and (include "siglake-compactor.bufferBeyondPod" .) (or (include "siglake-compactor.bufferTokenSecret" .) (and $b.tls.secretName $b.tls.clientCA)) }}true{{ end }}
{{- end }}

{{/* The pod volumes of the WAL buffer's token and TLS Secrets, "" without them. Directory mounts
(no subPath), so a rotated Secret reaches the running sidecar. */}}
{{- define "siglake-compactor.bufferVolumes" -}}
{{- with include "siglake-compactor.bufferTokenSecret" . }}
- name: siglake-buffer-token
  secret:
    secretName: {{ . | quote }}
    defaultMode: 0444
{{- end }}
{{- with include "siglake-compactor.bufferTLS" . }}
- name: siglake-buffer-tls
  secret:
    secretName: {{ . | quote }}
    defaultMode: 0444
{{- end }}
{{- end }}
