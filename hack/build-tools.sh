#!/usr/bin/env bash
# Builds drover's development and test binaries from Go modules only (no downloads of prebuilt binaries):
#   bin/k8s/{etcd,kube-apiserver,kube-controller-manager,kube-scheduler,kubectl,kwok}
#   bin/{controller-gen,golangci-lint}
#   bin/helm (the chart's tests lint and render charts/drover with it)
# A binary already built at the pinned version (recorded in bin/.versions/<name>) is skipped.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/bin"
mkdir -p "$bin/k8s" "$bin/.versions"

K8S_VERSION=v1.36.3
only="${1:-all}"

# pin <name> <version> <output> <build command...>
pin() {
	local name=$1 version=$2 out=$3
	shift 3
	if [[ -x "$out" && -f "$bin/.versions/$name" && "$(cat "$bin/.versions/$name")" == "$version" ]]; then
		return 0
	fi
	echo ">> building $name $version" >&2
	local start=$SECONDS
	"$@"
	echo "$version" >"$bin/.versions/$name"
	echo ">> built $name in $((SECONDS - start))s" >&2
}

k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	k8s_ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=36 -X $pkg.gitTreeState=clean"
done

build_k8s() { (cd "$root/hack/tools/k8s" && go build -trimpath -ldflags "$k8s_ldflags" -o "$bin/k8s/$1" "k8s.io/kubernetes/cmd/$1"); }
build_etcd() { (cd "$root/hack/tools/k8s" && go build -trimpath -ldflags "-s -w" -o "$bin/k8s/etcd" ./etcd); }
build_kwok() { (cd "$root/hack/tools/kwok" && go build -trimpath -ldflags "-s -w" -o "$bin/k8s/kwok" sigs.k8s.io/kwok/cmd/kwok); }
# helm as its own release build stamps it: its version, and the Kubernetes version its client modules are for
# (client-go v0.X.Y is Kubernetes 1.X), the default of .Capabilities.KubeVersion in `helm template` and lint.
build_helm() {
	local kv
	kv=$(cd "$root/hack/tools/helm" && go list -m -f '{{.Version}}' k8s.io/client-go)
	kv=${kv#v0.}
	kv=${kv%%.*}
	local flags="-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
	for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
		flags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kv"
	done
	(cd "$root/hack/tools/helm" && go build -trimpath -ldflags "$flags" -o "$bin/helm" helm.sh/helm/v3/cmd/helm)
}
build_tool() { (cd "$root/hack/tools/$3" && go build -trimpath -o "$bin/$1" "$2"); }

etcd_version=$(cd "$root/hack/tools/k8s" && go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
kwok_version=$(cd "$root/hack/tools/kwok" && go list -m -f '{{.Version}}' sigs.k8s.io/kwok)
cg_version=$(cd "$root/hack/tools" && go list -m -f '{{.Version}}' sigs.k8s.io/controller-tools)
lint_version=$(cd "$root/hack/tools/lint" && go list -m -f '{{.Version}}' github.com/golangci/golangci-lint/v2)
helm_version=$(cd "$root/hack/tools/helm" && go list -m -f '{{.Version}}' helm.sh/helm/v3)

if [[ $only == all || $only == dev ]]; then
	pin controller-gen "$cg_version" "$bin/controller-gen" build_tool controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen .
	pin golangci-lint "$lint_version" "$bin/golangci-lint" build_tool golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint lint
fi
if [[ $only == all || $only == helm ]]; then
	pin helm "$helm_version" "$bin/helm" build_helm
fi
if [[ $only == kubectl ]]; then
	pin kubectl "$K8S_VERSION" "$bin/k8s/kubectl" build_k8s kubectl
fi
if [[ $only == all || $only == k8s ]]; then
	pin etcd "$etcd_version" "$bin/k8s/etcd" build_etcd
	for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
		pin "$c" "$K8S_VERSION" "$bin/k8s/$c" build_k8s "$c"
	done
	pin kwok "$kwok_version" "$bin/k8s/kwok" build_kwok
fi
