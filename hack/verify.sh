#!/usr/bin/env bash
# make verify: regenerate everything and fail if that changed any file, or if a generated file is not
# tracked by git, or if a tracked file cites something outside the repository (hack/outsiderefs).
# Works on a dirty tree: it compares the tree before and after regeneration.
set -euo pipefail
cd "$(dirname "$0")/.."

generated=(api config/components config/crd config/default config/rbac/role.yaml internal/scheme README.md charts/drover)
watched=("${generated[@]}" go.mod go.sum internal cmd test hack)

snapshot() {
	{
		git diff HEAD -- "${watched[@]}"
		git ls-files --others --exclude-standard -- "${watched[@]}" | sort | xargs -r sha256sum
	} | sha256sum
}

before=$(snapshot)
make --no-print-directory generate manifests fmt >/dev/null
go mod tidy
for m in hack/tools hack/tools/k8s hack/tools/kwok hack/tools/lint hack/tools/helm; do (cd "$m" && go mod tidy); done
after=$(snapshot)

status=0
if [[ $before != "$after" ]]; then
	echo "verify: regeneration, gofmt or go mod tidy changed files; review and commit the result:"
	git status --short -- "${watched[@]}"
	status=1
fi
untracked=$(git ls-files --others --exclude-standard -- "${generated[@]}")
if [[ -n $untracked ]]; then
	echo "verify: generated files not tracked by git:"
	echo "$untracked"
	status=1
fi
if ! go run ./hack/outsiderefs; then
	echo "verify: the lines above cite documents outside the repository; state the rule itself instead"
	status=1
fi
exit $status
