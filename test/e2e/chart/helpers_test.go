package chart

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/drover-dev/drover/internal/localcluster"
)

// helmRun runs bin/helm against the test's cluster and returns its combined output.
func helmRun(t *testing.T, c *localcluster.Cluster, root string, args ...string) (string, error) {
	t.Helper()
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("%s is missing: build it with `make tools-helm`", helm)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm, append(args, "--kubeconfig", c.Kubeconfig)...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(c.Dir, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(c.Dir, "helm", "config"), "HELM_DATA_HOME="+filepath.Join(c.Dir, "helm", "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mustHelm runs helm and fails the test on an error.
func mustHelm(t *testing.T, c *localcluster.Cluster, root string, args ...string) string {
	t.Helper()
	out, err := helmRun(t, c, root, args...)
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
	return out
}

// runGuard runs the manager binary's uninstall-guard subcommand with args and kubeconfig; it returns the
// output and the exit code.
func runGuard(t *testing.T, binary, kubeconfig string, args []string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append(args, "--kubeconfig="+kubeconfig)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	default:
		t.Fatalf("running %s %v: %v", binary, args, err)
		return "", -1
	}
}

// decodeAll splits a YAML stream into objects.
func decodeAll(t *testing.T, data string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := localcluster.DecodeYAML([]byte(data))
	if err != nil {
		t.Fatalf("decoding YAML: %v", err)
	}
	return objs
}

// readObjects decodes every file's objects.
func readObjects(t *testing.T, files ...string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(filepath.Clean(f))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, decodeAll(t, string(data))...)
	}
	return objs
}
