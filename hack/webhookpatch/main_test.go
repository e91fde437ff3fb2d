package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const manifestIn = `---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /mutate-pod-persistentpodstate
  failurePolicy: Ignore
  name: mpod-persistentpodstate.drover.dev
  rules:
  - apiGroups:
    - ""
    apiVersions:
    - v1
    operations:
    - CREATE
    resources:
    - pods
  sideEffects: NoneOnDryRun
  timeoutSeconds: 5
- admissionReviewVersions:
  - v1
  clientConfig:
    service:
      name: webhook-service
      namespace: system
      path: /mutate-apps-tkestack-io-v1-tapp
  failurePolicy: Fail
  name: mtapp.drover.dev
  sideEffects: None
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata:
  name: validating-webhook-configuration
webhooks:
- admissionReviewVersions:
  - v1
  failurePolicy: Fail
  name: vtapp.drover.dev
  sideEffects: None
`

// podWebhookFields is what the pod webhook gets, in the generated formatting.
const podWebhookFields = `  matchConditions:
  - expression: has(object.metadata.name) && object.metadata.name != ''
    name: has-name
  - expression: has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r,
      has(r.controller) && r.controller)
    name: has-controller
`

const podWebhookSelectors = `  namespaceSelector:
    matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values:
      - kube-system
      - kube-public
      - kube-node-lease
      - drover-system
    - key: drover.dev/persistentpodstate
      operator: NotIn
      values:
      - disabled
  objectSelector:
    matchExpressions:
    - key: drover.dev/persistentpodstate
      operator: NotIn
      values:
      - disabled
`

func TestPatch(t *testing.T) {
	want := strings.Replace(manifestIn, "  failurePolicy: Ignore\n", "  failurePolicy: Ignore\n"+podWebhookFields, 1)
	want = strings.Replace(want, "  name: mpod-persistentpodstate.drover.dev\n",
		"  name: mpod-persistentpodstate.drover.dev\n"+podWebhookSelectors, 1)
	tests := map[string]struct {
		in, want string
		patches  map[string]fields
		wantErr  string
	}{
		"the pod webhook gets its selectors and conditions, the rest is unchanged": {
			in: manifestIn, patches: webhooks, want: want,
		},
		"patching again changes nothing": {
			in: want, patches: webhooks, want: want,
		},
		"nothing to patch: the formatting is kept": {
			in: manifestIn, patches: map[string]fields{}, want: manifestIn,
		},
		"a selector already set is replaced": {
			in: strings.Replace(manifestIn, "  sideEffects: NoneOnDryRun\n",
				"  objectSelector:\n    matchLabels:\n      a: b\n  sideEffects: NoneOnDryRun\n", 1),
			patches: webhooks, want: want,
		},
		"a missing webhook is an error": {
			in:      strings.ReplaceAll(manifestIn, "mpod-persistentpodstate.drover.dev", "mpod.drover.dev"),
			patches: webhooks, wantErr: "no webhook named mpod-persistentpodstate.drover.dev",
		},
		"invalid YAML is an error": {
			in: "---\nwebhooks: [\n", patches: webhooks, wantErr: "decoding a document",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Patch([]byte(tc.in), tc.patches)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("manifest (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunWritesOnlyChanges(t *testing.T) {
	file := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(file, []byte(manifestIn), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run(file); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(first), "name: has-controller") {
		t.Fatalf("the file was not patched:\n%s", first)
	}
	past := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(file, past, past); err != nil {
		t.Fatal(err)
	}
	if err := run(file); err != nil {
		t.Fatal(err)
	}
	if stat, err := os.Stat(file); err != nil || !stat.ModTime().Equal(past) {
		t.Errorf("a patched file was written again (stat %v, %v)", stat, err)
	}
}

// The committed manifest is generated and then patched by `make manifests`: patching it again must change
// nothing.
func TestCommittedManifestIsPatched(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("..", "..", "config", "webhook", "manifests.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Patch(in, webhooks)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(in), string(out)); diff != "" {
		t.Errorf("config/webhook/manifests.yaml is not patched; run make manifests (-committed +patched):\n%s", diff)
	}
}
