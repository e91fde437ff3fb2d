package localcluster

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
)

func TestOptionsKubeStellarDefaults(t *testing.T) {
	root := t.TempDir()
	o, err := Options{RepoRoot: root, Nodes: 1, KssimArgs: []string{"--report-delay=1s"}}.complete(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "config", "crd", "kubestellar"); o.KubeStellarCRDDir != want {
		t.Errorf("KubeStellarCRDDir = %s, want %s", o.KubeStellarCRDDir, want)
	}
	if want := filepath.Join(root, "bin", "kssim"); o.KssimBinary != want {
		t.Errorf("KssimBinary = %s, want %s", o.KssimBinary, want)
	}
	o, err = Options{RepoRoot: root, Nodes: 1, KubeStellarCRDDir: "crds/ks"}.complete(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "crds", "ks"); o.KubeStellarCRDDir != want {
		t.Errorf("relative KubeStellarCRDDir = %s, want %s", o.KubeStellarCRDDir, want)
	}
}

func TestCRDPaths(t *testing.T) {
	root := t.TempDir()
	bases, ks := filepath.Join(root, "bases"), filepath.Join(root, "kubestellar")
	for _, d := range []string{bases, ks} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(root, "missing")
	for name, tc := range map[string]struct {
		opts Options
		want []string
	}{
		"drover's and KubeStellar's": {Options{CRDDirs: []string{bases, missing}, KubeStellarCRDDir: ks}, []string{bases, ks}},
		"KubeStellar skipped":        {Options{CRDDirs: []string{bases}, KubeStellarCRDDir: ks, SkipKubeStellar: true}, []string{bases}},
		"KubeStellar dir missing":    {Options{CRDDirs: []string{bases}, KubeStellarCRDDir: missing}, []string{bases}},
	} {
		t.Run(name, func(t *testing.T) {
			c := &Cluster{opts: tc.opts, log: logr.Discard()}
			if diff := cmp.Diff(tc.want, c.crdPaths()); diff != "" {
				t.Errorf("crdPaths mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStagedBindingPolicySamples checks what the StagedBindingPolicy sample relies on: the KubeStellar
// objects are applied before the policy, and exactly one cluster is a dev cluster (the example's condition
// waits for a column reading "1", and COUNT would read "2" with two dev clusters).
func TestStagedBindingPolicySamples(t *testing.T) {
	root, err := FindRepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "config", "samples")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range entries {
		order = append(order, e.Name())
	}
	ks, sbp := slices.Index(order, "stagedbindingpolicy-kubestellar.yaml"), slices.Index(order, "stagedbindingpolicy.yaml")
	if ks < 0 || sbp < 0 || ks > sbp {
		t.Fatalf("samples in application order %v: want stagedbindingpolicy-kubestellar.yaml before stagedbindingpolicy.yaml", order)
	}
	kinds, dev := map[string]int{}, 0
	for _, file := range []string{order[ks], order[sbp]} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := DecodeYAML(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, o := range objs {
			kinds[o.GetKind()]++
			if o.GetKind() == "ManagedCluster" && o.GetLabels()["env"] == "dev" {
				dev++
			}
		}
	}
	want := map[string]int{"ManagedCluster": 3, "StatusCollector": 1, "Deployment": 1, "StagedBindingPolicy": 1}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("sample kinds mismatch (-want +got):\n%s", diff)
	}
	if dev != 1 {
		t.Errorf("%d ManagedClusters carry env: dev, want exactly 1", dev)
	}
}

func TestProcessKillAndDrop(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	dir := t.TempDir()
	p, err := startProcess("sleep", sleep, []string{"60"}, nil, filepath.Join(dir, "sleep.log"))
	if err != nil {
		t.Fatal(err)
	}
	rec := &pidRecorder{path: filepath.Join(dir, pidFileName)}
	for _, r := range []ProcessRecord{{Name: "sleep", PID: p.pid(), Path: sleep}, {Name: "other", PID: 1, Path: "/x"}} {
		if err := rec.add(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.kill(); err != nil {
		t.Fatal(err)
	}
	if !p.exited() || !p.stopping.Load() {
		t.Errorf("after kill: exited %v, stopping %v; want both true", p.exited(), p.stopping.Load())
	}
	rec.drop(p.pid())
	_, procs, err := ReadPIDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ProcessRecord{{Name: "other", PID: 1, Path: "/x"}}, procs); diff != "" {
		t.Errorf("records after drop mismatch (-want +got):\n%s", diff)
	}
}
