package testutil

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-dev/drover/internal/index"
	"github.com/drover-dev/drover/internal/scheme"
)

// Writes counts the API writes a FakeClient received, by "<verb> <Kind>" and by verb alone. The verbs are
// create, update, patch, delete, and "<subresource>-update" / "<subresource>-patch" (status-update, …).
type Writes struct {
	mu     sync.Mutex
	counts map[string]int
}

func (w *Writes) add(verb string, obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	kind := "?"
	if gvk, err := apiutil.GVKForObject(obj, scheme.New()); err == nil {
		kind = gvk.Kind
	}
	w.counts[verb+" "+kind]++
	w.counts[verb]++
	w.counts["total"]++
}

// Get returns one count: "total", a verb ("patch") or a verb and kind ("patch Node").
func (w *Writes) Get(key string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.counts[key]
}

// Take returns the "<verb> <Kind>" counts since the last Take (or Reset) and resets them.
func (w *Writes) Take() map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]int{}
	for k, v := range w.counts {
		if strings.Contains(k, " ") {
			out[k] = v
		}
	}
	w.counts = map[string]int{}
	return out
}

// Reset forgets every count.
func (w *Writes) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counts = map[string]int{}
}

// FakeClient is the fake client every controller's unit tests use: drover's scheme, the production field
// indexes, the status subresource for the given types, UIDs assigned on create as the API server does,
// and every write counted before it reaches the test's hooks or the store.
//
// Client is what the code under test uses; Inner bypasses counting and hooks (the test playing users,
// kubelets and other controllers).
type FakeClient struct {
	Client client.WithWatch
	Inner  client.WithWatch
	Writes *Writes
}

// FakeClientOptions configures NewFakeClient.
type FakeClientOptions struct {
	// Objects are stored before the test starts.
	Objects []client.Object
	// Indexes are the production indexes of the controller under test (its Indexes()).
	Indexes []index.Index
	// StatusSubresource lists the types whose status is a subresource.
	StatusSubresource []client.Object
	// Hooks replace single calls (to inject errors or block); writes are counted before a hook runs.
	Hooks interceptor.Funcs
	// ReturnManagedFields keeps managedFields on the objects read (the fake client strips them otherwise),
	// for tests of server-side apply field ownership.
	ReturnManagedFields bool
}

var uidSeq atomic.Int64

// NewFakeClient builds a FakeClient.
func NewFakeClient(opts FakeClientOptions) *FakeClient {
	b := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(opts.Objects...).
		WithStatusSubresource(opts.StatusSubresource...)
	if opts.ReturnManagedFields {
		b = b.WithReturnManagedFields()
	}
	inner := index.WithIndexes(b, opts.Indexes).Build()
	w := &Writes{counts: map[string]int{}}
	return &FakeClient{Client: interceptor.NewClient(inner, countingFuncs(w, opts.Hooks)), Inner: inner, Writes: w}
}

// countingFuncs counts every write, then delegates to the hook or the client.
func countingFuncs(w *Writes, hooks interceptor.Funcs) interceptor.Funcs {
	return interceptor.Funcs{
		Get:  hooks.Get,
		List: hooks.List,
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.add("create", obj)
			if obj.GetUID() == "" { // as the API server does (the fake client does not)
				obj.SetUID(types.UID(fmt.Sprintf("uid-%s-%d", obj.GetName(), uidSeq.Add(1))))
			}
			if hooks.Create != nil {
				return hooks.Create(ctx, c, obj, opts...)
			}
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.add("update", obj)
			if hooks.Update != nil {
				return hooks.Update(ctx, c, obj, opts...)
			}
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			w.add("patch", obj)
			if hooks.Patch != nil {
				return hooks.Patch(ctx, c, obj, p, opts...)
			}
			return c.Patch(ctx, obj, p, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			w.mu.Lock()
			w.counts["apply"]++
			w.counts["total"]++
			w.mu.Unlock()
			if hooks.Apply != nil {
				return hooks.Apply(ctx, c, obj, opts...)
			}
			return c.Apply(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.add("delete", obj)
			if hooks.Delete != nil {
				return hooks.Delete(ctx, c, obj, opts...)
			}
			return c.Delete(ctx, obj, opts...)
		},
		DeleteAllOf: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteAllOfOption) error {
			w.add("deleteallof", obj)
			if hooks.DeleteAllOf != nil {
				return hooks.DeleteAllOf(ctx, c, obj, opts...)
			}
			return c.DeleteAllOf(ctx, obj, opts...)
		},
		SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			w.add(sub+"-create", obj)
			if hooks.SubResourceCreate != nil {
				return hooks.SubResourceCreate(ctx, c, sub, obj, subObj, opts...)
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.add(sub+"-update", obj)
			if hooks.SubResourceUpdate != nil {
				return hooks.SubResourceUpdate(ctx, c, sub, obj, opts...)
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			w.add(sub+"-patch", obj)
			if hooks.SubResourcePatch != nil {
				return hooks.SubResourcePatch(ctx, c, sub, obj, p, opts...)
			}
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
		SubResourceGet: hooks.SubResourceGet,
	}
}
