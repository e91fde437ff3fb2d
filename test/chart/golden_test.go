package chart

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// The values matrix: each case is rendered and compared with testdata/<name>.yaml.
var cases = map[string]render{
	"default":     {},
	"certmanager": {values: "certs:\n  mode: certManager\n", args: []string{"--api-versions", "cert-manager.io/v1"}},
	"external": {values: `certs:
  mode: external
  external:
    caBundle: |
      -----BEGIN CERTIFICATE-----
      MIIBdzCCAR2gAwIBAgIBADAKBggqhkjOPQQDAjAAMB4XDTI2MDEwMTAwMDAwMFoX
      -----END CERTIFICATE-----
`},
	"only-tapp": {values: onlyControllers("tapp")},
	"persistentpodstate": {values: onlyControllers("persistentPodState") + `crds:
  persistentpodstates:
    install: false
persistentPodState:
  whitelist:
    - {group: demo.drover.dev, version: v1alpha1, kind: KVStore, replicasPath: spec.size}
    - {group: example.com, kind: Shard}
  customWorkloadRBAC:
    - {apiGroups: [demo.drover.dev], resources: [kvstores]}
    - {apiGroups: [example.com], resources: [shards]}
`},
	"monitoring": {values: "metrics:\n  serviceMonitor:\n    enabled: true\n  prometheusRule:\n    enabled: true\n",
		args: []string{"--api-versions", "monitoring.coreos.com/v1"}},
	"no-uninstall-guard": {values: "uninstallGuard:\n  enabled: false\n"},
	"namespace":          {namespace: "platform-ops"},
}

// controllerKeys are the chart's controllers.<key> (the registry's, see registry_test.go).
var controllerKeys = []string{"nodePool", "yurtAppDaemon", "unitedDaemonSet", "tapp", "persistentPodState", "stagedBindingPolicy"}

// onlyControllers is the values enabling only the given controllers.
func onlyControllers(keys ...string) string {
	var b strings.Builder
	b.WriteString("controllers:\n")
	for _, k := range controllerKeys {
		fmt.Fprintf(&b, "  %s:\n    enabled: %t\n", k, slices.Contains(keys, k))
	}
	return b.String()
}

func TestLint(t *testing.T) {
	t.Parallel()
	if out, err := helm(t, "lint", "--strict", chartDir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Lint with the values of every case too, but those needing APIs helm lint cannot be told of.
	for name, c := range cases {
		if c.values == "" || len(c.args) > 0 {
			continue
		}
		file := filepath.Join(t.TempDir(), name+".yaml")
		if err := os.WriteFile(file, []byte(c.values), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"lint", "--strict", chartDir, "--namespace", c.ns(), "--values", file}
		if _, err := helm(t, args...); err != nil {
			t.Errorf("lint with the values of %s: %v", name, err)
		}
	}
}

// TestGolden renders every case and compares it with its golden file. CRD specs are shown as their digest
// (TestChartMatchesConfig compares them with config/components), so the files stay readable.
func TestGolden(t *testing.T) {
	t.Parallel()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := goldenText(t, c.text(t))
			file := filepath.Join("testdata", name+".yaml")
			if *update {
				if err := os.MkdirAll("testdata", 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("%v (run go test ./test/chart -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("the render of %s differs from %s (run go test ./test/chart -update and review the diff):\n%s",
					name, file, firstDiff(string(want), got))
			}
		})
	}
}

// goldenText replaces each CRD's spec by its digest.
func goldenText(t *testing.T, out string) string {
	t.Helper()
	docs := splitManifests(out)
	for i, doc := range docs {
		if !strings.Contains(doc, "\nkind: CustomResourceDefinition\n") {
			continue
		}
		var o map[string]any
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatal(err)
		}
		spec, err := yaml.Marshal(o["spec"])
		if err != nil {
			t.Fatal(err)
		}
		o["spec"] = fmt.Sprintf("sha256:%x (the spec of config/components' CRD)", sha256.Sum256(spec))
		data, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		docs[i] = strings.SplitN(doc, "\n", 2)[0] + "\n" + string(data)
	}
	return "---\n" + strings.Join(docs, "\n---\n") + "\n"
}

// firstDiff shows the first differing line of two texts, with its line number.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return "(no line differs)"
}
