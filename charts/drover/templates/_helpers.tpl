{{- /*
Helpers of the drover chart. The templates under generated/ (hack/chartgen) call drover.labels,
drover.controllerEnabled, drover.crdRendered, drover.crdHeld, drover.crdGuard, drover.failurePolicy, drover.excludedNamespaces,
drover.caBundle and drover.webhookAnnotations; generated/_registry.tpl defines drover.registry, the controllers
and their CRDs as JSON.
*/}}

{{- /* Labels of every object of the chart (the manager's pods add drover.selectorLabels). */}}
{{- define "drover.labels" -}}
app.kubernetes.io/part-of: drover
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{- /* The labels the manager's Deployment, Services, PDB and spread rules select its pods by. */}}
{{- define "drover.selectorLabels" -}}
app.kubernetes.io/name: drover-manager
{{- end }}

{{- /* The manager's image: repository:tag (tag defaulting to v<appVersion>), or repository@digest. */}}
{{- define "drover.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default (printf "v%s" .Chart.AppVersion) }}
{{- end -}}
{{- end }}

{{- /* (list $ name): "true" when the controller name is enabled (controllers.<key>.enabled, default true). */}}
{{- define "drover.controllerEnabled" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- range include "drover.registry" $root | fromJsonArray -}}
{{- if and (eq .name $name) (dig .key "enabled" true ($root.Values.controllers | default dict)) -}}true{{- end -}}
{{- end -}}
{{- end }}

{{- /* The enabled controllers, comma-separated, in the registry's order: the value of --controllers. */}}
{{- define "drover.enabledControllers" -}}
{{- $names := list -}}
{{- range include "drover.registry" . | fromJsonArray -}}
{{- if include "drover.controllerEnabled" (list $ .name) -}}{{- $names = append $names .name -}}{{- end -}}
{{- end -}}
{{- join "," $names -}}
{{- end }}

{{- /* (list $ crdName): the CRD's entry of the registry with its controller's name, as JSON. */}}
{{- define "drover.crd" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- range include "drover.registry" $root | fromJsonArray -}}
{{- $controller := .name -}}
{{- range .crds -}}
{{- if eq .name $name -}}{{- set . "controller" $controller | toJson -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end }}

{{- /* (list $ crdName): "true" when the release renders the CRD: its controller is enabled and
crds.<plural>.install is true (the default), or, at an upgrade, the release already holds it
(drover.crdHeld). */}}
{{- define "drover.crdRendered" -}}
{{- $root := index . 0 -}}
{{- $crd := include "drover.crd" . | fromJson -}}
{{- if and (include "drover.controllerEnabled" (list $root $crd.controller)) (dig $crd.plural "install" true ($root.Values.crds | default dict)) -}}true
{{- else if include "drover.crdHeld" . -}}true{{- end -}}
{{- end }}

{{- /* (list $ crdName): "true" at an upgrade when the cluster's CRD belongs to this release and is not
annotated helm.sh/resource-policy=keep. Helm deletes what an upgrade no longer renders, and deleting a CRD
deletes every object of its kind: so turning a controller off, or crds.<plural>.install=false, keeps a CRD
the release installed. To hand such a CRD over without deleting it, annotate it with
helm.sh/resource-policy=keep first: Helm then leaves it in the cluster when the release drops it. */}}
{{- define "drover.crdHeld" -}}
{{- $root := index . 0 -}}
{{- if $root.Release.IsUpgrade -}}
{{- $live := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" (index . 1) -}}
{{- if $live -}}
{{- $ann := $live.metadata.annotations | default dict -}}
{{- if and (eq (get $ann "meta.helm.sh/release-name") $root.Release.Name) (eq (get $ann "meta.helm.sh/release-namespace") $root.Release.Namespace) (ne (get $ann "helm.sh/resource-policy") "keep") -}}true{{- end -}}
{{- end -}}
{{- end -}}
{{- end }}

{{- /* The CRDs the release renders, as a JSON list of the registry's entries. */}}
{{- define "drover.renderedCRDs" -}}
{{- $out := list -}}
{{- range include "drover.registry" . | fromJsonArray -}}
{{- range .crds -}}
{{- if include "drover.crdRendered" (list $ .name) -}}{{- $out = append $out . -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end }}

{{- /* (list $ crdName): at install and upgrade, fails when the CRD exists without this release's ownership
annotations: drover does not take over a CRD another project installed. helm template has no cluster, and
lookup finds nothing there. */}}
{{- define "drover.crdGuard" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- if or $root.Release.IsInstall $root.Release.IsUpgrade -}}
{{- $live := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" $name -}}
{{- if $live -}}
{{- $ann := $live.metadata.annotations | default dict -}}
{{- $release := get $ann "meta.helm.sh/release-name" -}}
{{- $releaseNS := get $ann "meta.helm.sh/release-namespace" -}}
{{- if not (and (eq $release $root.Release.Name) (eq $releaseNS $root.Release.Namespace)) -}}
{{- $crd := include "drover.crd" . | fromJson -}}
{{- $by := printf "probably installed by %s (or from drover's config/, make install)" $crd.owner -}}
{{- if $release -}}{{- $by = printf "owned by the Helm release %s in namespace %s" $release $releaseNS -}}{{- end -}}
{{- fail (printf "the CustomResourceDefinition %s already exists and does not belong to this release (%s in namespace %s): it was %s. drover does not take over another installation's CRD: set crds.%s.install=false to leave it there and have drover's %s controller use it, or remove that installation first." $name $root.Release.Name $root.Release.Namespace $by $crd.plural $crd.controller) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end }}

{{- /* (list $ class declared): a webhook's failurePolicy by its class (hack/chartgen): kinds, pods, nodes, or
declared (its own). */}}
{{- define "drover.failurePolicy" -}}
{{- $root := index . 0 -}}
{{- $class := index . 1 -}}
{{- $policy := index . 2 -}}
{{- $key := get (dict "kinds" "failurePolicy" "pods" "podFailurePolicy" "nodes" "nodeFailurePolicy") $class -}}
{{- if $key -}}{{- $policy = get $root.Values.webhooks $key -}}{{- end -}}
{{- if not (has $policy (list "Fail" "Ignore")) -}}
{{- fail (printf "webhooks.%s is %q: it must be Fail or Ignore" $key $policy) -}}
{{- end -}}
{{- $policy -}}
{{- end }}

{{- /* (list $ namespace...): the namespaces a webhook's namespaceSelector excludes, as a JSON list:
kube-system, the ones given, and the release's namespace. */}}
{{- define "drover.excludedNamespaces" -}}
{{- $root := first . -}}
{{- concat (list "kube-system") (rest .) (list $root.Release.Namespace) | uniq | toJson -}}
{{- end }}

{{- /* The caBundle line of a webhook's clientConfig: only with certs.mode=external (certs.external.caBundle,
PEM or base64 of PEM); the manager (self) or cert-manager (certManager) injects it otherwise. */}}
{{- define "drover.caBundle" -}}
{{- if eq .Values.certs.mode "external" -}}
{{- $ca := required "certs.mode=external needs certs.external.caBundle: the PEM (or base64 of the PEM) of the CA that signed the certificate in the Secret drover-webhook-server-cert" .Values.certs.external.caBundle -}}
{{- if hasPrefix "-----BEGIN" (trim $ca) -}}{{- $ca = b64enc (trim $ca) -}}{{- end -}}
caBundle: {{ $ca }}
{{- end -}}
{{- end }}

{{- /* cert-manager's CA injection annotation of a webhook configuration (or a CRD with a conversion webhook),
with certs.mode=certManager. */}}
{{- define "drover.caInjection" -}}
{{- if eq .Values.certs.mode "certManager" -}}
cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/drover-serving-cert
{{- end -}}
{{- end }}

{{- /* The annotations of a webhook configuration: drover.caInjection's, if any. */}}
{{- define "drover.webhookAnnotations" -}}
{{- with include "drover.caInjection" . -}}
annotations:
  {{- . | nindent 2 }}
{{- end -}}
{{- end }}

{{- /* (list $ dict): the keys of dict that are not in the list of known keys, with the value's path. */}}
{{- define "drover.checkKeys" -}}
{{- $path := index . 0 -}}
{{- $have := index . 1 | default dict -}}
{{- $known := index . 2 -}}
{{- range $k, $v := $have -}}
{{- if not (has $k $known) -}}
{{- fail (printf "%s.%s is not a known key; the known keys are: %s" $path $k (join ", " $known)) -}}
{{- end -}}
{{- if not (kindIs "map" $v) -}}
{{- fail (printf "%s.%s must be a map (with %s)" $path $k (ternary "enabled" "install" (eq $path "controllers"))) -}}
{{- end -}}
{{- end -}}
{{- end }}

{{- /* Fails on values the chart cannot honour, with what to set instead. Called by the Deployment. */}}
{{- define "drover.validate" -}}
{{- $keys := list -}}
{{- $plurals := list -}}
{{- range include "drover.registry" . | fromJsonArray -}}
{{- $keys = append $keys .key -}}
{{- range .crds -}}{{- $plurals = append $plurals .plural -}}{{- end -}}
{{- end -}}
{{- include "drover.checkKeys" (list "controllers" .Values.controllers $keys) -}}
{{- include "drover.checkKeys" (list "crds" .Values.crds $plurals) -}}
{{- if not (include "drover.enabledControllers" .) -}}
{{- fail "every controller is disabled: enable at least one of controllers.<name>.enabled (the manager runs every controller when --controllers is empty)" -}}
{{- end -}}
{{- if not (has .Values.certs.mode (list "self" "certManager" "external")) -}}
{{- fail (printf "certs.mode is %q: it must be self, certManager or external" .Values.certs.mode) -}}
{{- end -}}
{{- if and (eq .Values.certs.mode "certManager") (not (.Capabilities.APIVersions.Has "cert-manager.io/v1")) -}}
{{- fail "certs.mode=certManager needs cert-manager (API cert-manager.io/v1), which this cluster does not serve: install cert-manager first, or use certs.mode=self (the manager issues its own certificate). With helm template, pass --api-versions cert-manager.io/v1." -}}
{{- end -}}
{{- if and (or .Values.metrics.serviceMonitor.enabled .Values.metrics.prometheusRule.enabled) (not (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1")) -}}
{{- fail "metrics.serviceMonitor.enabled and metrics.prometheusRule.enabled need the Prometheus Operator's CRDs (API monitoring.coreos.com/v1: ServiceMonitor, PrometheusRule), which this cluster does not serve: install the Prometheus Operator first, or leave both false. With helm template, pass --api-versions monitoring.coreos.com/v1." -}}
{{- end -}}
{{- include "drover.checkExternalSecret" . -}}
{{- end }}

{{- /* With certs.mode=external, at install and upgrade against a cluster, fails when the Secret
drover-webhook-server-cert is missing from the release's namespace. Without a cluster (helm template)
lookup finds nothing at all, kube-system included, and nothing is checked. */}}
{{- define "drover.checkExternalSecret" -}}
{{- if and (eq .Values.certs.mode "external") (or .Release.IsInstall .Release.IsUpgrade) (lookup "v1" "Namespace" "" "kube-system") -}}
{{- if not (lookup "v1" "Secret" .Release.Namespace "drover-webhook-server-cert") -}}
{{- fail (printf "certs.mode=external: the Secret drover-webhook-server-cert (type kubernetes.io/tls, with tls.crt and tls.key for drover-webhook-service.%s.svc) does not exist in namespace %s; create it before installing, or use certs.mode=self or certManager" .Release.Namespace .Release.Namespace) -}}
{{- end -}}
{{- end -}}
{{- end }}

{{- /* The pod-level settings the manager and the uninstall guard's Job share. */}}
{{- define "drover.podSchedulingCommon" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end }}
