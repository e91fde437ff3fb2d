// Package chart tests the Helm chart charts/drover with bin/helm (built from Go modules by `make tools-helm`):
// lint, renders over a matrix of values compared with golden files (testdata/, rewritten by -update), the
// rules every render keeps, and that the chart's CRDs, webhooks and RBAC are config/components'.
package chart

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

// root is the repository's root.
var root = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}()

var chartDir = filepath.Join(root, "charts", "drover")

const defaultNamespace = "drover-system"

// helmBin is bin/helm; the test fails, naming the target that builds it, when it is missing.
func helmBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("bin/helm is missing (%v): build it with `make tools-helm`", err)
	}
	return bin
}

// helm runs bin/helm with args and returns its standard output, or its standard error as the error.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(),
		"HELM_DATA_HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// A render is one `helm template` of the chart: its namespace, values and extra arguments.
type render struct {
	namespace string
	values    string // YAML
	args      []string
}

func (r render) ns() string {
	if r.namespace == "" {
		return defaultNamespace
	}
	return r.namespace
}

// text renders the chart, failing the test on an error.
func (r render) text(t *testing.T) string {
	t.Helper()
	out, err := r.try(t)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// rendered caches renders: many tests look at the same one.
var rendered sync.Map // key -> *cachedRender

type cachedRender struct {
	once    sync.Once
	out     string
	err     error
	decoded sync.Once
	objs    []object // shared by the tests: read only
}

// try renders the chart (once per namespace, values and arguments) and returns helm's error.
func (r render) try(t *testing.T) (string, error) {
	t.Helper()
	c := r.cached(t)
	return c.out, c.err
}

func (r render) cached(t *testing.T) *cachedRender {
	t.Helper()
	helmBin(t) // before the cache: a missing helm fails every test with the same message
	key := strings.Join(append([]string{r.ns(), r.values}, r.args...), "\x00")
	v, _ := rendered.LoadOrStore(key, &cachedRender{})
	c := v.(*cachedRender)
	c.once.Do(func() { c.out, c.err = r.run(t) })
	return c
}

func (r render) run(t *testing.T) (string, error) {
	t.Helper()
	args := []string{"template", "drover", chartDir, "--namespace", r.ns()}
	if r.values != "" {
		file := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(file, []byte(r.values), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--values", file)
	}
	return helm(t, append(args, r.args...)...)
}

// object is a decoded manifest.
type object map[string]any

func (o object) kind() string { s, _ := o["kind"].(string); return s }

func (o object) meta(key string) string {
	m, _ := o["metadata"].(map[string]any)
	s, _ := m[key].(string)
	return s
}

func (o object) name() string { return o.meta("name") }

func (o object) annotations() map[string]any {
	m, _ := o["metadata"].(map[string]any)
	a, _ := m["annotations"].(map[string]any)
	return a
}

// into decodes o into a typed object.
func (o object) into(t *testing.T, v any) {
	t.Helper()
	data, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, v); err != nil {
		t.Fatalf("%s %s: %v", o.kind(), o.name(), err)
	}
}

// splitManifests splits helm's output into its documents (text).
func splitManifests(out string) []string {
	var docs []string
	for doc := range strings.SplitSeq("\n"+out, "\n---") {
		if strings.TrimSpace(doc) != "" {
			docs = append(docs, strings.TrimPrefix(doc, "\n"))
		}
	}
	return docs
}

// decode decodes helm's output.
func decode(t *testing.T, out string) []object {
	t.Helper()
	var objs []object
	for _, doc := range splitManifests(out) {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("decoding %q: %v", doc, err)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	return objs
}

// objects renders and decodes (once per render); the objects are shared, not to be changed.
func (r render) objects(t *testing.T) []object {
	t.Helper()
	c := r.cached(t)
	if c.err != nil {
		t.Fatal(c.err)
	}
	c.decoded.Do(func() { c.objs = decode(t, c.out) })
	if c.objs == nil {
		t.Fatal("the render could not be decoded (see the test that decoded it first)")
	}
	return c.objs
}

func ofKind(objs []object, kinds ...string) []object {
	var out []object
	for _, o := range objs {
		if slices.Contains(kinds, o.kind()) {
			out = append(out, o)
		}
	}
	return out
}

func find(t *testing.T, objs []object, kind, name string) object {
	t.Helper()
	for _, o := range objs {
		if o.kind() == kind && o.name() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

func names(objs []object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.name())
	}
	slices.Sort(out)
	return out
}

// readDocs decodes a manifest file of the repository.
func readDocs(t *testing.T, rel string) []object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, string(data))
}
