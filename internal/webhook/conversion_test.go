package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
)

// A kind of two versions for the conversion handler: v2 is the hub; v1 calls the hub's spec.name spec.title
// and has no spec.count. spec.when, spec.size and spec.labels are shared.
var (
	widgetV1 = schema.GroupVersion{Group: "test.drover.dev", Version: "v1"}
	widgetV2 = schema.GroupVersion{Group: "test.drover.dev", Version: "v2"}
	widgetV3 = schema.GroupVersion{Group: "test.drover.dev", Version: "v3"}
)

type widgetSpec struct {
	Title  string            `json:"title,omitempty"`
	Name   string            `json:"name,omitempty"`
	Count  int32             `json:"count,omitempty"`
	Size   string            `json:"size,omitempty"`
	When   *metav1.Time      `json:"when,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Panic  bool              `json:"panic,omitempty"`
}

type widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              widgetSpec `json:"spec,omitempty"`
}

func (w *widget) deepCopy() *widget {
	out := *w
	w.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// widgetHub is v2.
type widgetHub struct{ widget }

func (w *widgetHub) DeepCopyObject() runtime.Object { return &widgetHub{*w.deepCopy()} }
func (*widgetHub) Hub()                             {}

// widgetSpoke is v1 (and v3, the same type), converted through the hub.
type widgetSpoke struct{ widget }

func (w *widgetSpoke) DeepCopyObject() runtime.Object { return &widgetSpoke{*w.deepCopy()} }

func (w *widgetSpoke) ConvertTo(h conversion.Hub) error {
	hub := h.(*widgetHub)
	if w.Spec.Panic {
		panic("asked to")
	}
	hub.ObjectMeta = w.ObjectMeta
	hub.Spec = widgetSpec{Name: w.Spec.Title, Size: w.Spec.Size, When: w.Spec.When, Labels: w.Spec.Labels}
	return nil
}

func (w *widgetSpoke) ConvertFrom(h conversion.Hub) error {
	hub := h.(*widgetHub)
	if hub.Spec.Count < 0 {
		return errors.New("negative count")
	}
	w.ObjectMeta = hub.ObjectMeta
	w.Spec = widgetSpec{Title: hub.Spec.Name, Size: hub.Spec.Size, When: hub.Spec.When, Labels: hub.Spec.Labels}
	return nil
}

func widgetScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(widgetV1.WithKind("Widget"), &widgetSpoke{})
	s.AddKnownTypeWithName(widgetV3.WithKind("Widget"), &widgetSpoke{})
	s.AddKnownTypeWithName(widgetV2.WithKind("Widget"), &widgetHub{})
	return s
}

// review sends one ConversionReview of objs to the handler and returns its response.
func review(t *testing.T, desired string, objs ...string) *apiextensionsv1.ConversionResponse {
	t.Helper()
	req := apiextensionsv1.ConversionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request:  &apiextensionsv1.ConversionRequest{UID: types.UID("u1"), DesiredAPIVersion: desired},
	}
	for _, o := range objs {
		req.Request.Objects = append(req.Request.Objects, runtime.RawExtension{Raw: []byte(o)})
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	NewConversionHandler(widgetScheme()).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ConversionPath, bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var got apiextensionsv1.ConversionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Response == nil || got.Response.UID != "u1" {
		t.Fatalf("response %+v, want one for uid u1", got.Response)
	}
	return got.Response
}

func objectsOf(t *testing.T, resp *apiextensionsv1.ConversionResponse) []map[string]any {
	t.Helper()
	if resp.Result.Status != metav1.StatusSuccess {
		t.Fatalf("conversion failed: %s", resp.Result.Message)
	}
	out := make([]map[string]any, len(resp.ConvertedObjects))
	for i, o := range resp.ConvertedObjects {
		if err := json.Unmarshal(o.Raw, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func TestConversionHandlerConverts(t *testing.T) {
	const v1 = `{"apiVersion":"test.drover.dev/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"title":"t","size":"s"}}`
	for _, tc := range []struct{ desired, in, field, want string }{
		{"test.drover.dev/v2", v1, "name", "t"},
		{"test.drover.dev/v3", v1, "title", "t"},
		{"test.drover.dev/v1", `{"apiVersion":"test.drover.dev/v2","kind":"Widget","metadata":{"name":"a"},"spec":{"name":"n"}}`, "title", "n"},
	} {
		got := objectsOf(t, review(t, tc.desired, tc.in, tc.in))
		if len(got) != 2 {
			t.Fatalf("%s: %d objects, want 2", tc.desired, len(got))
		}
		spec, _ := got[0]["spec"].(map[string]any)
		if got[0]["apiVersion"] != tc.desired || got[0]["kind"] != "Widget" || spec[tc.field] != tc.want {
			t.Errorf("to %s: %v, want spec.%s=%s", tc.desired, got[0], tc.field, tc.want)
		}
	}
}

// A value of the wrong type or form is carried over at its path, so that admission answers 422 naming it.
func TestConversionHandlerKeepsUndecodableValues(t *testing.T) {
	in := `{"apiVersion":"test.drover.dev/v1","kind":"Widget","metadata":{"name":"a","labels":{"x":5}},` +
		`"spec":{"title":"t","size":7,"when":"yesterday","labels":{"ok":"1","bad":true}}}`
	got := objectsOf(t, review(t, "test.drover.dev/v2", in))[0]
	spec := got["spec"].(map[string]any)
	labels := spec["labels"].(map[string]any)
	meta := got["metadata"].(map[string]any)
	if spec["name"] != "t" || spec["size"] != float64(7) || spec["when"] != "yesterday" ||
		labels["ok"] != "1" || labels["bad"] != true || meta["labels"].(map[string]any)["x"] != float64(5) {
		t.Errorf("converted %v: the bad values are not at their paths", got)
	}

	// Into a struct the converted object omits: spec.when alone is bad, spec is otherwise empty.
	got = objectsOf(t, review(t, "test.drover.dev/v2", `{"apiVersion":"test.drover.dev/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"when":12}}`))[0]
	if got["spec"].(map[string]any)["when"] != float64(12) {
		t.Errorf("converted %v: spec.when is not carried over", got)
	}
}

func TestConversionHandlerFailures(t *testing.T) {
	for _, tc := range []struct{ name, desired, in, want string }{
		{"unknown version", "test.drover.dev/v9", `{"apiVersion":"test.drover.dev/v1","kind":"Widget"}`, "v9"},
		{"other group", "other.dev/v1", `{"apiVersion":"test.drover.dev/v1","kind":"Widget"}`, "cannot convert"},
		{"not an object", "test.drover.dev/v2", `[1]`, "not a JSON object"},
		{"convert error", "test.drover.dev/v1", `{"apiVersion":"test.drover.dev/v2","kind":"Widget","spec":{"count":-1}}`, "negative count"},
		{"panic", "test.drover.dev/v2", `{"apiVersion":"test.drover.dev/v1","kind":"Widget","spec":{"panic":true}}`, "internal error"},
	} {
		resp := review(t, tc.desired, tc.in)
		if resp.Result.Status != metav1.StatusFailure || !strings.Contains(resp.Result.Message, tc.want) || len(resp.ConvertedObjects) != 0 {
			t.Errorf("%s: result %+v, want a failure saying %q", tc.name, resp.Result, tc.want)
		}
	}
}

func TestConversionHandlerRefusesNonReview(t *testing.T) {
	rec := httptest.NewRecorder()
	NewConversionHandler(widgetScheme()).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, ConversionPath, strings.NewReader(`{}`)))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("status %d, want 400", rec.Code)
	}
}

func TestPutAt(t *testing.T) {
	doc := map[string]any{"spec": map[string]any{"list": []any{map[string]any{}}}}
	for _, tc := range []struct {
		steps []string
		ok    bool
	}{
		{[]string{"spec", "list", "0", "x"}, true},
		{[]string{"spec", "list", "3", "x"}, false},
		{[]string{"spec", "new", "y"}, true},
		{[]string{"spec", "missing", "0"}, false},
	} {
		if got := putAt(doc, tc.steps, 1); got != tc.ok {
			t.Errorf("putAt %v = %t, want %t", tc.steps, got, tc.ok)
		}
	}
}
