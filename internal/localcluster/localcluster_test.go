package localcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func TestLayout(t *testing.T) {
	got := Layout(4)
	want := []NodeSpec{
		{Name: "node-00", Pool: "pool-a", Zone: "zone-1"},
		{Name: "node-01", Pool: "pool-b", Zone: "zone-2"},
		{Name: "node-02", Pool: "pool-c", Zone: "zone-3"},
		{Name: "node-03", Pool: "pool-a", Zone: "zone-1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Layout(4) mismatch (-want +got):\n%s", diff)
	}
	if n := Layout(150)[149].Name; n != "node-149" {
		t.Errorf("Layout(150)[149] = %s, want node-149", n)
	}
	if n := Layout(12)[11].Name; n != "node-11" {
		t.Errorf("Layout(12)[11] = %s, want node-11", n)
	}
}

func TestFakeNode(t *testing.T) {
	n := FakeNode(NodeSpec{Name: "node-07", Pool: "pool-b", Zone: "zone-2"})
	want := map[string]string{LabelNodePool: "pool-b", LabelZone: "zone-2", LabelHostname: "node-07"}
	for k, v := range want {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	if n.Annotations[AnnotationKwokNode] != KwokNodeValue {
		t.Errorf("annotation %s = %q, want %q", AnnotationKwokNode, n.Annotations[AnnotationKwokNode], KwokNodeValue)
	}
	if pods := n.Status.Allocatable.Pods().Value(); pods != 1000 {
		t.Errorf("allocatable pods = %d, want 1000", pods)
	}
}

func TestReadRoles(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "role.yaml")
	yaml := `---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: drover-manager-role
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: drover-manager-role
rules: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: other
  namespace: elsewhere
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: ignored
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	roles, err := readRoles([]string{file, filepath.Join(dir, "missing.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range roles {
		got = append(got, r.GetKind()+" "+r.GetNamespace()+"/"+r.GetName())
	}
	want := []string{"ClusterRole /drover-manager-role", "Role drover-system/drover-manager-role", "Role elsewhere/other"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("readRoles mismatch (-want +got):\n%s", diff)
	}
}

func TestSetArgs(t *testing.T) {
	args := envtest.EmptyArguments()
	if err := setArgs(args, []string{"--v=4", "--profiling"}); err != nil {
		t.Fatal(err)
	}
	if got := args.Get("v").Get(nil); !cmp.Equal(got, []string{"4"}) {
		t.Errorf("v = %v, want [4]", got)
	}
	if err := setArgs(args, []string{"v=4"}); err == nil {
		t.Error("setArgs accepted an argument without --")
	}
}

// TestKillRecorded starts a process, records it as a dead owner would have, and checks that KillRecorded
// stops it and only it.
func TestKillRecorded(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	cmd := exec.Command(sleep, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	dir := t.TempDir()
	rec := &pidRecorder{path: filepath.Join(dir, pidFileName), file: pidFile{Owner: 1 << 30}}
	if err := rec.add(ProcessRecord{Name: "sleep", PID: cmd.Process.Pid, Path: sleep}); err != nil {
		t.Fatal(err)
	}
	// A record whose executable does not match must be left alone.
	if err := rec.add(ProcessRecord{Name: "self", PID: os.Getpid(), Path: "/not/this/binary"}); err != nil {
		t.Fatal(err)
	}
	if !Running(cmd.Process.Pid, sleep) {
		t.Fatal("Running() = false for a live process")
	}
	killed, err := KillRecorded(dir, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 || killed[0].Name != "sleep" {
		t.Errorf("KillRecorded stopped %v, want only sleep", killed)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the recorded process still runs")
	}
	if _, procs, _ := ReadPIDs(dir); len(procs) != 0 {
		t.Errorf("the record was not removed: %v", procs)
	}
}

func TestFindRepoRoot(t *testing.T) {
	root, err := FindRepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "localcluster")); err != nil {
		t.Errorf("FindRepoRoot() = %s, which has no internal/localcluster", root)
	}
}
