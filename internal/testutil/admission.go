package testutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/drover-dev/drover/internal/scheme"
)

// DryRuns records the dry-run creates a webhook's validator sends, of objects of type T, and answers them
// with Respond (nil: accepted). The dry runs of one request go concurrently: Objs holds them in the order
// they arrived, Opts the options of each.
type DryRuns[T client.Object] struct {
	mu      sync.Mutex
	Objs    []T
	Opts    [][]client.CreateOption
	Respond func(obj T) error
}

// Client returns a fake client whose creates are recorded and answered by d.
func (d *DryRuns[T]) Client() client.Client {
	return fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			o, ok := obj.(T)
			if !ok {
				return fmt.Errorf("the dry run sent a %T", obj)
			}
			d.mu.Lock()
			d.Objs = append(d.Objs, o.DeepCopyObject().(T)) //nolint:forcetypeassert // a deep copy has the type of its original
			d.Opts = append(d.Opts, opts)
			d.mu.Unlock()
			if d.Respond == nil {
				return nil
			}
			return d.Respond(o)
		},
	}).Build()
}

// CauseFields returns the field paths of an API error's causes, in order.
func CauseFields(err error) []string {
	var out []string
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			out = append(out, c.Field)
		}
	}
	return out
}

// DeniedFields checks that resp is a 422 denial and returns the field paths of its causes.
func DeniedFields(t *testing.T, resp admission.Response) []string {
	t.Helper()
	if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusUnprocessableEntity || resp.Result.Details == nil {
		t.Fatalf("response = %v, want a 422 denial with causes", resp.Result)
	}
	var fields []string
	for _, c := range resp.Result.Details.Causes {
		fields = append(fields, c.Field)
	}
	return fields
}

// CauseMessages returns "<field>: <message>" for each cause of an API error.
func CauseMessages(err error) []string {
	var out []string
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			out = append(out, c.Field+": "+c.Message)
		}
	}
	return out
}

// PatchPaths returns "<operation> <path>" for each operation of a mutating webhook's patch, sorted.
func PatchPaths(resp admission.Response) []string {
	var paths []string
	for _, p := range resp.Patches {
		paths = append(paths, p.Operation+" "+p.Path)
	}
	slices.Sort(paths)
	return paths
}

// ApplyPatches applies the JSON patch of a mutating webhook's response resp to raw.
func ApplyPatches(t *testing.T, raw []byte, resp admission.Response) []byte {
	t.Helper()
	if len(resp.Patches) == 0 {
		return raw
	}
	ops, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("applying the patch %s: %v", ops, err)
	}
	return out
}

// ErrorSummary renders field errors as "<type> <field>" for comparison.
func ErrorSummary(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}
