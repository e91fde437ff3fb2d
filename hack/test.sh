#!/usr/bin/env bash
# Runs drover's test tiers and prints a summary. Usage: hack/test.sh all|unit|integration|e2e
#   unit         pure logic and fake-client tests next to the code
#   integration  test/integration: real kube-apiserver + etcd (envtest), manager and webhooks in-process
#   e2e          test/e2e: the local cluster with the real manager binary
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export KUBEBUILDER_ASSETS="$root/bin/k8s"
export DROVER_MANAGER="$root/bin/drover-manager"

summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
export TEST_SUMMARY_FILE=$summary

go build -o bin/testsummary ./hack/testsummary || exit 1

run_tier() {
	local tier=$1
	shift
	echo "== $tier tests"
	go test -json "$@" 2>&1 | bin/testsummary "$tier"
}

tiers=("$@")
[[ ${#tiers[@]} -eq 0 || ${tiers[0]} == all ]] && tiers=(unit integration e2e)

status=0
for tier in "${tiers[@]}"; do
	case $tier in
	unit)
		mapfile -t pkgs < <(go list ./... | grep -v -e /test/integration -e /test/e2e)
		run_tier unit -count=1 -race "${pkgs[@]}" || status=1
		;;
	integration)
		run_tier integration -count=1 -timeout 30m ./test/integration/... -args ${GINKGO_ARGS:-} || status=1
		;;
	e2e)
		run_tier e2e -count=1 -timeout 40m ./test/e2e/... -args ${GINKGO_ARGS:-} || status=1
		;;
	*)
		echo "unknown tier $tier (want unit, integration, e2e or all)" >&2
		exit 2
		;;
	esac
done

echo
echo "== test summary"
passed=0 failed=0
while read -r tier p f s secs; do
	printf '   %-12s %4d passed %4d failed %4d skipped  %5ds\n' "$tier" "$p" "$f" "$s" "$secs"
	passed=$((passed + p))
	failed=$((failed + f))
done <"$summary"
echo "$passed passed, $failed failed"
[[ $status -eq 0 && $failed -eq 0 ]] || { echo "FAIL"; exit 1; }
echo "PASS"
