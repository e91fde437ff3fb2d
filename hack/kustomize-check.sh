#!/usr/bin/env bash
# make verify: config/default and config/undeploy build, and so does config/default in another namespace with
# the optional cert-manager component; then nothing may still name drover-system (the namespace reaches every
# place through kustomize's namespace and config/default's replacements), and every clientConfig, a CRD's
# conversion webhook's included, names the prefixed Service.
set -euo pipefail
cd "$(dirname "$0")/.."
kubectl=${KUBECTL:-bin/k8s/kubectl}

"$kubectl" kustomize config/default >/dev/null
"$kubectl" kustomize config/undeploy >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r config "$tmp/"
sed -i -e 's/^namespace: drover-system$/namespace: platform-drover/' \
	-e 's|^# end of components$|  - ../certmanager\n&|' "$tmp/config/default/kustomization.yaml"
out=$("$kubectl" kustomize "$tmp/config/default")
if grep -n 'drover-system' <<<"$out"; then
	echo "kustomize-check: config/default in namespace platform-drover still names drover-system (lines above)" >&2
	exit 1
fi
if grep -n 'name: webhook-service$' <<<"$out"; then
	echo "kustomize-check: a clientConfig (webhook or CRD conversion) still names the Service without its prefix (lines above)" >&2
	exit 1
fi
for want in 'cert-manager.io/inject-ca-from: platform-drover/drover-serving-cert' \
	'drover-webhook-service.platform-drover.svc' '--cert-mode=external'; do
	if ! grep -qF -- "$want" <<<"$out"; then
		echo "kustomize-check: config/default with the certmanager component lacks: $want" >&2
		exit 1
	fi
done
echo "kustomize-check: config/default, config/undeploy and the certmanager variant in another namespace build"
