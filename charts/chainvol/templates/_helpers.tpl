{{/* Labels of every object: deploy/base's app.kubernetes.io/name plus Helm's. */}}
{{- define "chainvol.labels" -}}
app.kubernetes.io/name: chainvol
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ include "chainvol.version" . | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/*
The version the chart runs, as an image tag and label value: image.tag,
else appVersion (hack/version.sh's version, which make image stamps into
bin/image/chart/chainvol) with SemVer's "+" as "_", as make image tags it.
*/}}
{{- define "chainvol.version" -}}
{{ .Values.image.tag | default (.Chart.AppVersion | replace "+" "_") }}
{{- end }}

{{/* The driver image reference. */}}
{{- define "chainvol.image" -}}
{{ .Values.image.repository }}:{{ include "chainvol.version" . }}
{{- end }}

{{/* The kubelet directory without a trailing slash. */}}
{{- define "chainvol.kubeletDir" -}}
{{ trimSuffix "/" .Values.kubeletDir }}
{{- end }}

{{/* The container securityContext of the unprivileged sidecars. */}}
{{- define "chainvol.sidecarSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: ["ALL"]
{{- end }}

{{/* An HTTP liveness probe on a named port: (list PATH PORT). */}}
{{- define "chainvol.probe" -}}
livenessProbe:
  httpGet:
    path: {{ index . 0 }}
    port: {{ index . 1 }}
  initialDelaySeconds: 10
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 5
{{- end }}

{{/* A Go duration such as 26h, 90m or 3600s in seconds, for PromQL. */}}
{{- define "chainvol.seconds" -}}
{{- $d := toString . -}}
{{- if hasSuffix "h" $d }}{{ mul (trimSuffix "h" $d | int) 3600 }}
{{- else if hasSuffix "m" $d }}{{ mul (trimSuffix "m" $d | int) 60 }}
{{- else }}{{ trimSuffix "s" $d | int }}{{ end -}}
{{- end }}
