package kit

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func needs(name string, list ...CacheNeed) *Controller {
	return &Controller{Name: name, Cache: func() []CacheNeed { return list }}
}

func TestMergeCacheNeeds(t *testing.T) {
	pooled := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{"pool": "a"})}
	other := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{"team": "b"})}
	oneConfigMap := cache.ByObject{Field: fields.OneTermEqualSelector("metadata.name", "x")}
	nodeMeta := &metav1.PartialObjectMetadata{}
	nodeMeta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	sts := func() client.Object { return &appsv1.StatefulSet{} }
	cases := map[string]struct {
		controllers []*Controller
		enabled     []string
		want        map[string]string // kind -> restriction; a kind absent is cached whole
		wantErr     string
	}{
		"one restriction is kept": {
			controllers: []*Controller{needs("yad", CacheNeed{Object: sts(), Only: pooled})},
			want:        map[string]string{"StatefulSet": "labels pool=a"},
		},
		"a whole need removes no one's filter but wins over it, in either order": {
			controllers: []*Controller{needs("yad", CacheNeed{Object: sts(), Only: pooled}), needs("pps", CacheNeed{Object: sts()})},
			want:        map[string]string{},
		},
		"a whole need first still wins": {
			controllers: []*Controller{needs("pps", CacheNeed{Object: sts()}), needs("yad", CacheNeed{Object: sts(), Only: pooled})},
			want:        map[string]string{},
		},
		"the same restriction twice is one": {
			controllers: []*Controller{needs("yad", CacheNeed{Object: sts(), Only: pooled}), needs("uds", CacheNeed{Object: sts(), Only: pooled})},
			want:        map[string]string{"StatefulSet": "labels pool=a"},
		},
		"a disabled controller's need is ignored": {
			controllers: []*Controller{needs("yad", CacheNeed{Object: sts(), Only: pooled}), needs("pps", CacheNeed{Object: sts()})},
			enabled:     []string{"yad"},
			want:        map[string]string{"StatefulSet": "labels pool=a"},
		},
		"different types merge apart": {
			controllers: []*Controller{needs("yad", CacheNeed{Object: sts(), Only: pooled}),
				needs("pps", CacheNeed{Object: &corev1.ConfigMap{}, Only: oneConfigMap})},
			want: map[string]string{"StatefulSet": "labels pool=a", "ConfigMap": "fields metadata.name=x"},
		},
		"two different restrictions cannot merge": {
			controllers: []*Controller{needs("yad", CacheNeed{Object: sts(), Only: pooled}), needs("x", CacheNeed{Object: sts(), Only: other})},
			wantErr:     "controllers yad and x need different subsets of StatefulSet",
		},
		"a type typed and as metadata would be cached twice": {
			controllers: []*Controller{needs("np", CacheNeed{Object: &corev1.Node{}}), needs("pps", CacheNeed{Object: nodeMeta})},
			wantErr:     "both typed and as metadata only",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			enabled := sets.New(tc.enabled...)
			if tc.enabled == nil {
				enabled = sets.New(Names(tc.controllers)...)
			}
			got, err := MergeCacheNeeds(cache.Options{}, clientgoscheme.Scheme, tc.controllers, enabled)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gotRestrictions := map[string]string{}
			for obj, by := range got.ByObject {
				gotRestrictions[kindOf(obj)] = restriction(by)
			}
			if len(gotRestrictions) != len(tc.want) {
				t.Fatalf("restricted types %v, want %v", gotRestrictions, tc.want)
			}
			for kind, want := range tc.want {
				if gotRestrictions[kind] != want {
					t.Errorf("%s restricted to %q, want %q", kind, gotRestrictions[kind], want)
				}
			}
		})
	}
}

// TestMergeCacheNeedsKeepsBase: the base options are kept, and a base that already restricts a declared type
// is refused rather than silently overwritten.
func TestMergeCacheNeedsKeepsBase(t *testing.T) {
	base := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	got, err := MergeCacheNeeds(base, clientgoscheme.Scheme, nil, sets.New[string]())
	if err != nil || got.DefaultTransform == nil {
		t.Fatalf("MergeCacheNeeds(no needs) = %v, %v; want the base with its transform", got, err)
	}
	base.ByObject = map[client.Object]cache.ByObject{&appsv1.StatefulSet{}: {Label: labels.Everything()}}
	c := needs("yad", CacheNeed{Object: &appsv1.StatefulSet{}, Only: cache.ByObject{Label: labels.SelectorFromSet(labels.Set{"a": "b"})}})
	if _, err := MergeCacheNeeds(base, clientgoscheme.Scheme, []*Controller{c}, sets.New("yad")); err == nil {
		t.Fatal("a base restricting a declared type was accepted")
	}
}
