package tapp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/drover-dev/drover/internal/testutil"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/scheme"
)

// seedDocs are the YAML documents of a testdata/tapp manifest, decoded strictly: case-sensitive field names,
// no unknown and no duplicate fields.
type seedDoc struct {
	json []byte
	obj  runtime.Object
}

func readSeed(t *testing.T, file string) []seedDoc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "tapp", file))
	if err != nil {
		t.Fatal(err)
	}
	strict := serializer.NewCodecFactory(scheme.New(), serializer.EnableStrict).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []seedDoc
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := strict.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("%s: strict decoding: %v", file, err)
		}
		raw, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, seedDoc{json: raw, obj: obj})
	}
	return docs
}

// seedTApp returns the JSON of the single TApp of a seed manifest.
func seedTApp(t *testing.T, file string) []byte {
	t.Helper()
	var out []byte
	for _, d := range readSeed(t, file) {
		if _, ok := d.obj.(*tkestackv1.TApp); ok {
			if out != nil {
				t.Fatalf("%s holds more than one TApp", file)
			}
			out = d.json
		}
	}
	if out == nil {
		t.Fatalf("%s holds no TApp", file)
	}
	return out
}

// admitTApp runs raw through both handlers as the API server would (mutating, then validating the patched
// object) and returns the stored JSON.
func admitTApp(t *testing.T, op admissionv1.Operation, raw, oldRaw []byte) []byte {
	t.Helper()
	mutating, validating := tappHandlers()
	ctx := context.Background()
	resp := mutating.Handle(ctx, tappRequest(op, raw, oldRaw))
	if !resp.Allowed {
		t.Fatalf("defaulting denied: %v", resp.Result)
	}
	stored := testutil.ApplyPatches(t, raw, resp)
	resp = validating.Handle(ctx, tappRequest(op, stored, oldRaw))
	if !resp.Allowed {
		t.Fatalf("validation denied: %v", resp.Result.Message)
	}
	if len(resp.Warnings) > 0 {
		t.Errorf("warnings: %q", resp.Warnings)
	}
	return stored
}

func decodeTApp(t *testing.T, raw []byte) *tkestackv1.TApp {
	t.Helper()
	app := &tkestackv1.TApp{}
	if err := yaml.UnmarshalStrict(raw, app); err != nil {
		t.Fatal(err)
	}
	return app
}

var seedFiles = []string{
	"01-create-same-template.yaml",
	"02-create-different-templates.yaml",
	"03-update-specified-pod.yaml",
	"04-rolling-update.yaml",
	"05-kill-pod.yaml",
	"06-service-name.yaml",
	"07-auto-delete-unused-template.yaml",
}

// TestSeedManifestsAreAdmitted: every manifest of the seed tutorial is created as it is.
func TestSeedManifestsAreAdmitted(t *testing.T) {
	for _, file := range seedFiles {
		t.Run(file, func(t *testing.T) {
			app := decodeTApp(t, admitTApp(t, admissionv1.Create, seedTApp(t, file), nil))
			if app.Spec.Selector == nil || app.Spec.Selector.MatchLabels["app"] != "example-tapp" {
				t.Errorf("selector = %v, want app=example-tapp", app.Spec.Selector)
			}
			if app.Labels["app"] != "example-tapp" {
				t.Errorf("labels = %v, want app=example-tapp", app.Labels)
			}
		})
	}
}

// TestSeedManifestsInSequence: the tutorial applies its manifests one over the other to the same TApp.
func TestSeedManifestsInSequence(t *testing.T) {
	stored := admitTApp(t, admissionv1.Create, seedTApp(t, seedFiles[0]), nil)
	for _, file := range seedFiles[1:] {
		t.Run(file, func(t *testing.T) {
			stored = admitTApp(t, admissionv1.Update, seedTApp(t, file), stored)
		})
	}
}

func TestSeedManifestDetails(t *testing.T) {
	t.Run("defaultTemplateName", func(t *testing.T) {
		app := decodeTApp(t, admitTApp(t, admissionv1.Create, seedTApp(t, "02-create-different-templates.yaml"), nil))
		if app.Spec.DefaultTemplateName != "test" {
			t.Errorf("defaultTemplateName = %q, want test", app.Spec.DefaultTemplateName)
		}
	})
	t.Run("the capitalised DefaultTemplateName", func(t *testing.T) {
		raw := seedTApp(t, "07-auto-delete-unused-template.yaml")
		if got := decodeTApp(t, raw).Spec.DefaultTemplateNameCompat; got != "test4" {
			t.Fatalf("strictly decoded DefaultTemplateName = %q, want test4", got)
		}
		app := decodeTApp(t, admitTApp(t, admissionv1.Create, raw, nil))
		if app.Spec.DefaultTemplateName != "test4" || app.Spec.DefaultTemplateNameCompat != "" {
			t.Errorf("defaultTemplateName = %q, DefaultTemplateName = %q; want test4 and empty",
				app.Spec.DefaultTemplateName, app.Spec.DefaultTemplateNameCompat)
		}
		if app.Spec.UpdateStrategy.Template != "test3" || app.Spec.UpdateStrategy.MaxUnavailable.IntValue() != 1 {
			t.Errorf("updateStrategy = %+v", app.Spec.UpdateStrategy)
		}
	})
	t.Run("kill", func(t *testing.T) {
		app := decodeTApp(t, admitTApp(t, admissionv1.Create, seedTApp(t, "05-kill-pod.yaml"), nil))
		if app.Spec.Statuses["1"] != tkestackv1.InstanceKilled {
			t.Errorf("statuses = %v", app.Spec.Statuses)
		}
	})
	t.Run("the Service of section 2.7", func(t *testing.T) {
		docs := readSeed(t, "06-service-name.yaml")
		if len(docs) != 2 {
			t.Fatalf("got %d documents, want 2", len(docs))
		}
		if svc, ok := docs[0].obj.(*corev1.Service); !ok || svc.Spec.ClusterIP != corev1.ClusterIPNone {
			t.Errorf("first document = %T %v, want the headless Service", docs[0].obj, docs[0].obj)
		}
	})
}

// TestSeedDecodingIsStrict guards the strictness the seed tests rely on.
func TestSeedDecodingIsStrict(t *testing.T) {
	strict := serializer.NewCodecFactory(scheme.New(), serializer.EnableStrict).UniversalDeserializer()
	for name, doc := range map[string]string{
		"unknown field":  "apiVersion: apps.tkestack.io/v1\nkind: TApp\nspec:\n  replica: 3\n",
		"wrong case":     "apiVersion: apps.tkestack.io/v1\nkind: TApp\nspec:\n  defaulttemplatename: x\n",
		"duplicate keys": "apiVersion: apps.tkestack.io/v1\nkind: TApp\nspec:\n  replicas: 3\n  replicas: 4\n",
	} {
		if _, _, err := strict.Decode([]byte(doc), nil, nil); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}
