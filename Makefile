# drover — developer entry points. `make help` lists them.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

ROOT        := $(CURDIR)
BIN         := $(ROOT)/bin
K8S_BIN     := $(BIN)/k8s
LOCAL       := $(ROOT)/.local
CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT  := $(BIN)/golangci-lint
KUBECTL     := $(K8S_BIN)/kubectl
export KUBEBUILDER_ASSETS := $(K8S_BIN)

# Test tunables: GINKGO_ARGS are passed to the Ginkgo suites, e.g. GINKGO_ARGS='--ginkgo.focus=NodePool'.
GINKGO_ARGS ?=
BENCH_ARGS  ?=

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: tools
tools: ## Build the control plane (etcd, kube-*, kubectl, kwok) into bin/k8s and controller-gen, golangci-lint, helm into bin/.
	./hack/build-tools.sh all

.PHONY: tools-k8s
tools-k8s:
	./hack/build-tools.sh k8s

.PHONY: tools-dev
tools-dev:
	./hack/build-tools.sh dev

.PHONY: tools-helm
tools-helm: ## Build helm into bin/helm (the chart's tests run it).
	./hack/build-tools.sh helm

.PHONY: generate
generate: tools-dev ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./api/..."

# API packages whose CRDs drover installs; each CRD goes to the component of the controller that lists it
# (hack/registrygen). KubeStellar's control.kubestellar.io group is generated apart into config/crd/kubestellar:
# KubeStellar installs those CRDs itself, so the copies serve tests and the local cluster only, never
# `make install` or `make deploy`.
DROVER_API_DIRS := api/kruise api/openyurt api/tkestack api/kubestellar/community
KUBESTELLAR_CONTROL_API_DIR := api/kubestellar/control
CRD_GEN_DIR := $(LOCAL)/gen/crd

.PHONY: manifests
manifests: tools-dev ## Generate CRDs, RBAC, webhook configurations, the scheme, the components and the Helm chart's generated part from the registry.
	rm -rf $(CRD_GEN_DIR)
	$(CONTROLLER_GEN) crd:generateEmbeddedObjectMeta=true $(foreach d,$(wildcard $(DROVER_API_DIRS)),paths="./$(d)/...") \
		output:crd:artifacts:config=$(CRD_GEN_DIR)
	$(CONTROLLER_GEN) crd paths="./$(KUBESTELLAR_CONTROL_API_DIR)/..." output:crd:artifacts:config=config/crd/kubestellar
	go run ./hack/kscrdpatch config/crd/kubestellar/control.kubestellar.io_bindingpolicies.yaml
	go run ./hack/crdpatch -strip-defaults=spec.template,spec.templatePool,spec.volumeClaimTemplates \
		-strip-descriptions=spec.template,spec.templatePool,spec.volumeClaimTemplates \
		$(CRD_GEN_DIR)/apps.tkestack.io_tapps.yaml
	$(CONTROLLER_GEN) rbac:roleName=manager-role paths="./internal/registry/..." output:rbac:artifacts:config=config/rbac
	go run ./hack/registrygen -crds $(CRD_GEN_DIR) -controller-gen $(CONTROLLER_GEN)
	go run ./hack/chartgen

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -s -w $$(git ls-files '*.go' | grep -v '^hack/tools/')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: tools-dev ## Run golangci-lint (config: .golangci.yml).
	$(GOLANGCI_LINT) run ./...

.PHONY: verify
verify: tools vet lint ## Regenerate everything and lint; fail on any diff or untracked generated file.
	./hack/verify.sh
	KUBECTL=$(KUBECTL) ./hack/kustomize-check.sh
	@echo "verify: clean"

##@ Build and run

# The version stamped into the manager (--version) and the image: VERSION if given, else the git tag on HEAD,
# else v<the VERSION file>-dev (the VERSION file is also the Helm chart's version and appVersion).
ifeq ($(origin VERSION),undefined)
VERSION := $(or $(shell git describe --tags --exact-match 2>/dev/null),v$(shell cat $(ROOT)/VERSION)-dev)
endif
VERSION_LDFLAGS := -X github.com/drover-dev/drover/internal/version.version=$(VERSION) \
	-X github.com/drover-dev/drover/internal/version.commit=$(shell git rev-parse HEAD 2>/dev/null) \
	-X github.com/drover-dev/drover/internal/version.date=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

.PHONY: build
build: ## Build the manager, the kubectl plugin (kubectl-drover) and the local-cluster and bench commands into bin/.
	go build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/drover-manager ./cmd/drover-manager
	go build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/kubectl-drover ./cmd/kubectl-drover
	go build -o $(BIN)/drover-local ./cmd/drover-local
	go build -o $(BIN)/drover-bench ./cmd/drover-bench
	go build -o $(BIN)/kssim ./cmd/kssim

IMAGE_DIR ?= $(BIN)/image
IMAGE_PLATFORMS := amd64 arm64

.PHONY: image
image: ## Build the manager's OCI image (linux/amd64 and linux/arm64, no Docker) into bin/image; IMAGE=<registry/repo:tag> pushes it.
	for arch in $(IMAGE_PLATFORMS); do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch go build -trimpath -ldflags "$(VERSION_LDFLAGS)" \
			-o $(BIN)/image-build/linux-$$arch/manager ./cmd/drover-manager || exit 1; \
	done
	go run ./hack/image -out $(IMAGE_DIR) -version $(VERSION) \
		$(foreach a,$(IMAGE_PLATFORMS),-binary linux/$(a)=$(BIN)/image-build/linux-$(a)/manager) $(if $(IMAGE),-push $(IMAGE))

.PHONY: run
run: tools-k8s build ## Run the whole system on this machine (local cluster, samples, manager log). Ctrl-C stops it.
	$(BIN)/drover-local run

.PHONY: local-up
local-up: tools-k8s build ## Start the local cluster in the background; prints the KUBECONFIG line.
	$(BIN)/drover-local up

.PHONY: local-down
local-down: ## Stop every process the local cluster started.
	go build -o $(BIN)/drover-local ./cmd/drover-local
	$(BIN)/drover-local down

##@ Test

.PHONY: test
test: tools-k8s tools-helm build ## Run every test tier: unit, integration, e2e. Prints a summary.
	./hack/test.sh all

.PHONY: test-unit
test-unit: tools-helm ## Unit tests (no cluster; the chart's tests run bin/helm).
	./hack/test.sh unit

.PHONY: test-integration
test-integration: tools-k8s ## Integration tests on a real kube-apiserver + etcd (envtest).
	./hack/test.sh integration

.PHONY: test-e2e
test-e2e: tools-k8s tools-helm build ## End-to-end tests on the local cluster with the real manager binary (and the Helm chart installed with bin/helm).
	./hack/test.sh e2e

.PHONY: fuzz-admission
fuzz-admission: tools-k8s build ## Admission fuzz: 4,000 mutated objects of every kind, then the largest valid object of each kind six at once, through a fresh local cluster (DROVER_FUZZ_REQUESTS, DROVER_FUZZ_SEED); writes .local/fuzz/admission.json.
	DROVER_MANAGER=$(BIN)/drover-manager DROVER_FUZZ_REQUESTS=$${DROVER_FUZZ_REQUESTS:-4000} \
		go test -count=1 -timeout 30m -v ./test/e2e/ -run TestE2E -args --ginkgo.focus='Admission fuzz'

.PHONY: bench
bench: tools-k8s build ## Run the benchmark scenarios on a fresh local cluster; writes .local/bench/*.json.
	$(BIN)/drover-bench $(BENCH_ARGS)

##@ Deployment (into the cluster of the current KUBECONFIG)

# The manifests under config/ are committed: these targets need no generator, only kubectl (built from Go
# modules into bin/k8s the first time, about two minutes).

.PHONY: kubectl
kubectl:
	./hack/build-tools.sh kubectl

.PHONY: install
install: kubectl ## Install drover's CRDs.
	$(KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: kubectl ## Remove drover's CRDs and with them EVERY drover object (and their pods): asks for YES=1.
	@if [[ "$(YES)" != 1 ]]; then \
		echo "make uninstall deletes drover's CRDs, and with them every TApp, YurtAppDaemon, UnitedDaemonSet, NodePool,"; \
		echo "PersistentPodState and StagedBindingPolicy of the cluster and, through garbage collection, their pods and"; \
		echo "workloads. Run 'make undeploy' to remove drover and keep them. To go on: make uninstall YES=1"; \
		exit 1; \
	fi
	$(KUBECTL) delete --ignore-not-found -k config/crd

IMG ?= drover-manager:dev

.PHONY: deploy
deploy: kubectl ## Deploy CRDs, RBAC, webhooks and the manager (IMG=image) with kustomize (needs cert-manager).
	$(KUBECTL) kustomize config/default | sed "s|image: drover-manager:dev|image: $(IMG)|" | $(KUBECTL) apply --server-side -f -

.PHONY: undeploy
undeploy: kubectl ## Remove what deploy created except the CRDs: drover's objects and their pods stay.
	$(KUBECTL) delete --ignore-not-found -k config/undeploy
