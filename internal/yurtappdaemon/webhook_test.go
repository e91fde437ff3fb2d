package yurtappdaemon

import (
	"context"
	"strings"
	"testing"

	"github.com/drover-dev/drover/internal/testutil"
	"github.com/drover-dev/drover/internal/webhook"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/scheme"
)

// The owner fixtures are built inline: the tests run every case for both owner kinds through ownerKinds.

const testNamespace = "edge"

// validateFunc runs the generic validator of one owner kind; oldObj is nil for CREATE.
type validateFunc func(ctx context.Context, cache client.Reader, dryRun client.Writer,
	oldObj, newObj openyurtv1alpha1.Owner) (admission.Warnings, error)

// testOwnerKind is one of the two owner kinds, as the tests see it.
type testOwnerKind struct {
	gvk      schema.GroupVersionKind
	newObj   func() openyurtv1alpha1.Owner
	other    func() client.Object
	validate validateFunc
	defaults func(ctx context.Context, obj openyurtv1alpha1.Owner) error
	// handlers returns the admission handlers the webhook server runs, with the same-name check and the dry run off.
	handlers func() (mutating, validating admission.Handler)
}

var (
	yadGVK = openyurtv1alpha1.GroupVersion.WithKind("YurtAppDaemon")
	uddGVK = openyurtv1alpha1.GroupVersion.WithKind("UnitedDaemonSet")

	ownerKinds = map[string]testOwnerKind{
		"YurtAppDaemon": {
			gvk:      yadGVK,
			newObj:   func() openyurtv1alpha1.Owner { return &openyurtv1alpha1.YurtAppDaemon{} },
			other:    func() client.Object { return &openyurtv1alpha1.UnitedDaemonSet{} },
			validate: validateAs[*openyurtv1alpha1.YurtAppDaemon](yadGVK, &openyurtv1alpha1.UnitedDaemonSet{}),
			defaults: defaultAs[*openyurtv1alpha1.YurtAppDaemon],
			handlers: handlersAs[*openyurtv1alpha1.YurtAppDaemon](yadGVK),
		},
		"UnitedDaemonSet": {
			gvk:      uddGVK,
			newObj:   func() openyurtv1alpha1.Owner { return &openyurtv1alpha1.UnitedDaemonSet{} },
			other:    func() client.Object { return &openyurtv1alpha1.YurtAppDaemon{} },
			validate: validateAs[*openyurtv1alpha1.UnitedDaemonSet](uddGVK, &openyurtv1alpha1.YurtAppDaemon{}),
			defaults: defaultAs[*openyurtv1alpha1.UnitedDaemonSet],
			handlers: handlersAs[*openyurtv1alpha1.UnitedDaemonSet](uddGVK),
		},
	}
)

func validateAs[T openyurtv1alpha1.Owner](gvk schema.GroupVersionKind, other client.Object) validateFunc {
	return func(ctx context.Context, cache client.Reader, dryRun client.Writer,
		oldObj, newObj openyurtv1alpha1.Owner) (admission.Warnings, error) {
		v := OwnerValidator[T]{GVK: gvk, Other: other, Cache: cache, DryRun: dryRun}
		if oldObj == nil {
			return v.ValidateCreate(ctx, newObj.(T))
		}
		return v.ValidateUpdate(ctx, oldObj.(T), newObj.(T))
	}
}

func defaultAs[T openyurtv1alpha1.Owner](ctx context.Context, obj openyurtv1alpha1.Owner) error {
	return OwnerDefaulter[T]{}.Default(ctx, obj.(T))
}

func handlersAs[T openyurtv1alpha1.Owner](gvk schema.GroupVersionKind) func() (admission.Handler, admission.Handler) {
	return func() (admission.Handler, admission.Handler) {
		newObj := func() T {
			obj, err := scheme.New().New(gvk)
			if err != nil {
				panic(err)
			}
			return obj.(T) //nolint:forcetypeassert // the scheme makes the kind's type
		}
		w, err := webhook.NewKindWebhooks(scheme.New(), newObj, OwnerDefaulter[T]{}, admission.Validator[T](OwnerValidator[T]{GVK: gvk}))
		if err != nil {
			panic(err)
		}
		return w.Mutating, w.Validating
	}
}

// forEachOwnerKind runs f as a subtest per owner kind.
func forEachOwnerKind(t *testing.T, f func(t *testing.T, k testOwnerKind)) {
	t.Helper()
	for name, k := range ownerKinds {
		t.Run(name, func(t *testing.T) { f(t, k) })
	}
}

// owner returns an owner of kind k named name in the test namespace with spec.
func (k testOwnerKind) owner(name string, spec *openyurtv1alpha1.YurtAppDaemonSpec) openyurtv1alpha1.Owner {
	o := k.newObj()
	o.SetName(name)
	o.SetNamespace(testNamespace)
	*o.DaemonSpec() = *spec.DeepCopy()
	return o
}

var podLabels = map[string]string{"app": "dns"}

func podTemplate() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "dns", "tier": "edge"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "busybox:1.36"}},
			Containers:     []corev1.Container{{Name: "dns", Image: "coredns:1.11"}},
		},
	}
}

// deploymentSpec is a valid owner spec with a Deployment template, as defaulting leaves it.
func deploymentSpec() *openyurtv1alpha1.YurtAppDaemonSpec {
	return &openyurtv1alpha1.YurtAppDaemonSpec{
		Selector:             &metav1.LabelSelector{MatchLabels: podLabels},
		NodePoolSelector:     &metav1.LabelSelector{MatchLabels: map[string]string{"region": "east"}},
		RevisionHistoryLimit: ptr.To[int32](10),
		WorkloadTemplate: openyurtv1alpha1.WorkloadTemplate{DeploymentTemplate: &openyurtv1alpha1.DeploymentTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "net"}},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: podLabels},
				Template: podTemplate(),
			},
		}},
	}
}

// statefulSetSpec is a valid owner spec with a StatefulSet template, as defaulting leaves it.
func statefulSetSpec() *openyurtv1alpha1.YurtAppDaemonSpec {
	return &openyurtv1alpha1.YurtAppDaemonSpec{
		Selector:             &metav1.LabelSelector{MatchLabels: podLabels},
		NodePoolSelector:     &metav1.LabelSelector{},
		RevisionHistoryLimit: ptr.To[int32](10),
		WorkloadTemplate: openyurtv1alpha1.WorkloadTemplate{StatefulSetTemplate: &openyurtv1alpha1.StatefulSetTemplateSpec{
			Spec: appsv1.StatefulSetSpec{
				Selector:    &metav1.LabelSelector{MatchLabels: podLabels},
				ServiceName: "dns",
				Template:    podTemplate(),
			},
		}},
	}
}

// with returns a copy of spec changed by f.
func with(spec *openyurtv1alpha1.YurtAppDaemonSpec, f func(*openyurtv1alpha1.YurtAppDaemonSpec)) *openyurtv1alpha1.YurtAppDaemonSpec {
	out := spec.DeepCopy()
	f(out)
	return out
}

func deployPod(s *openyurtv1alpha1.YurtAppDaemonSpec) *corev1.PodTemplateSpec {
	return &s.WorkloadTemplate.DeploymentTemplate.Spec.Template
}

func requestContext(op admissionv1.Operation, raw []byte) context.Context {
	return admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Namespace: testNamespace, Object: runtime.RawExtension{Raw: raw},
	}})
}

func TestDefaultOwner(t *testing.T) {
	status := openyurtv1alpha1.YurtAppDaemonStatus{ObservedGeneration: 3, CurrentRevision: "r-1", TotalWorkloads: 2}
	tests := map[string]struct {
		spec      *openyurtv1alpha1.YurtAppDaemonSpec
		wantLimit int32
	}{
		"limit defaults to 10": {
			spec:      with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.RevisionHistoryLimit = nil }),
			wantLimit: 10,
		},
		"a set limit, even 0, is kept": {
			spec:      with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.RevisionHistoryLimit = ptr.To[int32](0) }),
			wantLimit: 0,
		},
		"a StatefulSet template gets the selector": {
			spec:      with(statefulSetSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.RevisionHistoryLimit = nil }),
			wantLimit: 10,
		},
	}
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				obj := k.owner("dns", with(tc.spec, func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
					s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dns", "tier": "edge"}}
				}))
				*obj.DaemonStatus() = status
				if err := k.defaults(context.Background(), obj); err != nil {
					t.Fatalf("Default: %v", err)
				}
				spec := obj.DaemonSpec()
				if got := ptr.Deref(spec.RevisionHistoryLimit, -1); got != tc.wantLimit {
					t.Errorf("revisionHistoryLimit = %d, want %d", got, tc.wantLimit)
				}
				var tmplSelector *metav1.LabelSelector
				var pod *corev1.PodTemplateSpec
				if d := spec.WorkloadTemplate.DeploymentTemplate; d != nil {
					tmplSelector, pod = d.Spec.Selector, &d.Spec.Template
				} else {
					tmplSelector, pod = spec.WorkloadTemplate.StatefulSetTemplate.Spec.Selector, &spec.WorkloadTemplate.StatefulSetTemplate.Spec.Template
				}
				if diff := cmp.Diff(spec.Selector, tmplSelector); diff != "" {
					t.Errorf("template selector is not the owner's (-owner +template):\n%s", diff)
				}
				if tmplSelector == spec.Selector {
					t.Error("the template selector aliases the owner's")
				}
				if diff := cmp.Diff(podTemplate(), *pod); diff != "" {
					t.Errorf("the pod template was defaulted (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(status, *obj.DaemonStatus()); diff != "" {
					t.Errorf("defaulting touched the status (-want +got):\n%s", diff)
				}
			})
		}
	})
}

func TestDefaultOwnerWithoutTemplate(t *testing.T) {
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		obj := k.owner("dns", &openyurtv1alpha1.YurtAppDaemonSpec{})
		if err := k.defaults(context.Background(), obj); err != nil {
			t.Fatalf("Default: %v", err)
		}
		if got := ptr.Deref(obj.DaemonSpec().RevisionHistoryLimit, -1); got != 10 {
			t.Errorf("revisionHistoryLimit = %d, want 10", got)
		}
	})
}

func TestValidateOwner(t *testing.T) {
	long := strings.Repeat("a", maxOwnerNameLength+1)
	tests := map[string]struct {
		name    string // default "dns"
		spec    *openyurtv1alpha1.YurtAppDaemonSpec
		oldSpec *openyurtv1alpha1.YurtAppDaemonSpec // nil: CREATE
		oldName string
		want    []string
	}{
		"valid Deployment owner":  {spec: deploymentSpec()},
		"valid StatefulSet owner": {spec: statefulSetSpec()},
		"a name of 52 characters": {
			name: strings.Repeat("a", maxOwnerNameLength), spec: deploymentSpec(),
		},
		"a name of 53 characters": {
			name: long, spec: deploymentSpec(),
			want: []string{"FieldValueTooLong metadata.name"},
		},
		"not checked on update": {
			name: long, spec: deploymentSpec(), oldName: long, oldSpec: deploymentSpec(),
		},
		"no template": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.WorkloadTemplate.DeploymentTemplate = nil }),
			want: []string{"FieldValueRequired spec.workloadTemplate"},
		},
		"both templates": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTemplate.StatefulSetTemplate = statefulSetSpec().WorkloadTemplate.StatefulSetTemplate
			}),
			want: []string{"FieldValueInvalid spec.workloadTemplate"},
		},
		"no selector": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.Selector = nil }),
			want: []string{"FieldValueRequired spec.selector"},
		},
		"empty selector": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.Selector = &metav1.LabelSelector{} }),
			want: []string{"FieldValueInvalid spec.selector"},
		},
		"selector with the pool-name key": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dns", openyurtv1alpha1.LabelPoolName: "x"}}
				deployPod(s).Labels[openyurtv1alpha1.LabelPoolName] = "x"
			}),
			want: []string{"FieldValueForbidden spec.selector", "FieldValueForbidden spec.workloadTemplate.deploymentTemplate.spec.template.metadata.labels"},
		},
		"selector does not match the pod labels": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { deployPod(s).Labels = map[string]string{"app": "web"} }),
			want: []string{"FieldValueInvalid spec.workloadTemplate.deploymentTemplate.spec.template.metadata.labels"},
		},
		"no nodepoolSelector": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.NodePoolSelector = nil }),
			want: []string{"FieldValueRequired spec.nodepoolSelector"},
		},
		"invalid nodepoolSelector": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.NodePoolSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Near"}}}
			}),
			want: []string{"FieldValueInvalid spec.nodepoolSelector.matchExpressions[0].operator"},
		},
		"negative revisionHistoryLimit": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.RevisionHistoryLimit = ptr.To[int32](-1) }),
			want: []string{"FieldValueInvalid spec.revisionHistoryLimit"},
		},
		"nodeSelector with the pool key": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				deployPod(s).Spec.NodeSelector = map[string]string{openyurtv1beta1.LabelCurrentNodePool: "east", "zone": "a"}
			}),
			want: []string{"FieldValueForbidden spec.workloadTemplate.deploymentTemplate.spec.template.spec.nodeSelector"},
		},
		"tweak without pools or selector": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](2)}}}
			}),
			want: []string{"FieldValueRequired spec.workloadTweaks[0]"},
		},
		"image of an unknown container": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Pools: []string{"east"}, Tweaks: openyurtv1alpha1.Tweaks{
					ContainerImages: []openyurtv1alpha1.ContainerImage{{Name: "init", TargetImage: "busybox:2"}, {Name: "sidecar", TargetImage: "x:1"}}}}}
			}),
			want: []string{"FieldValueNotFound spec.workloadTweaks[0].tweaks.containerImages[1].name"},
		},
		"patch on a protected path": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Pools: []string{"east"}, Tweaks: openyurtv1alpha1.Tweaks{
					Patches: []openyurtv1alpha1.Patch{{Path: "/spec/selector/matchLabels/x", Operation: openyurtv1alpha1.PatchRemove}}}}}
			}),
			want: []string{"FieldValueForbidden spec.workloadTweaks[0].tweaks.patches[0].path"},
		},
		"selector changed": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dns", "tier": "edge"}}
			}),
			oldSpec: deploymentSpec(),
			want:    []string{"FieldValueForbidden spec.selector"},
		},
		"a first selector may be set": {
			spec:    deploymentSpec(),
			oldSpec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.Selector = nil }),
		},
		"template kind switched": {
			spec: statefulSetSpec(), oldSpec: deploymentSpec(),
			want: []string{"FieldValueForbidden spec.workloadTemplate"},
		},
		"immutable StatefulSet field changed": {
			spec: with(statefulSetSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.WorkloadTemplate.StatefulSetTemplate.Spec.ServiceName = "other"
			}),
			oldSpec: statefulSetSpec(),
			want:    []string{"FieldValueForbidden spec.workloadTemplate.statefulSetTemplate.spec"},
		},
		"mutable StatefulSet fields may change": {
			spec: with(statefulSetSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				sts := &s.WorkloadTemplate.StatefulSetTemplate.Spec
				sts.Replicas, sts.MinReadySeconds = ptr.To[int32](3), 5
				sts.Template.Spec.Containers[0].Image = "coredns:1.12"
				sts.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}
			}),
			oldSpec: statefulSetSpec(),
		},
		"Deployment fields may change": {
			spec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				d := &s.WorkloadTemplate.DeploymentTemplate.Spec
				d.Strategy.Type, d.MinReadySeconds, d.Paused = appsv1.RecreateDeploymentStrategyType, 5, true
			}),
			oldSpec: deploymentSpec(),
		},
	}
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				var oldObj openyurtv1alpha1.Owner
				if tc.oldSpec != nil {
					oldObj = k.owner(defaultString(tc.oldName, "dns"), tc.oldSpec)
				}
				newObj := k.owner(defaultString(tc.name, "dns"), tc.spec)
				if diff := cmp.Diff(tc.want, testutil.ErrorSummary(ValidateOwner(newObj, oldObj))); diff != "" {
					t.Errorf("errors (-want +got):\n%s", diff)
				}
			})
		}
	})
}

func defaultString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestValidateOwnerAccumulates(t *testing.T) {
	bad := with(statefulSetSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
		s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "dns", "tier": "core"}}
		s.NodePoolSelector = nil
		s.RevisionHistoryLimit = ptr.To[int32](-1)
		s.WorkloadTemplate.StatefulSetTemplate.Spec.ServiceName = "other"
		s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](1)}}}
	})
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		want := []string{
			"FieldValueInvalid spec.workloadTemplate.statefulSetTemplate.spec.template.metadata.labels",
			"FieldValueRequired spec.nodepoolSelector",
			"FieldValueRequired spec.workloadTweaks[0]",
			"FieldValueInvalid spec.revisionHistoryLimit",
			"FieldValueForbidden spec.selector",
			"FieldValueForbidden spec.workloadTemplate.statefulSetTemplate.spec",
		}
		got := testutil.ErrorSummary(ValidateOwner(k.owner("dns", bad), k.owner("dns", statefulSetSpec())))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("update errors (-want +got):\n%s", diff)
		}
		want = []string{"FieldValueTooLong metadata.name", want[0], want[1], want[2], want[3]}
		got = testutil.ErrorSummary(ValidateOwner(k.owner(strings.Repeat("x", 60), bad), nil))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("create errors (-want +got):\n%s", diff)
		}
	})
}

func TestValidateOwnerRatchets(t *testing.T) {
	// legacy breaks only drover's own rules, as an object stored under OpenYurt may.
	legacy := with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
		s.NodePoolSelector = nil
		deployPod(s).Spec.NodeSelector = map[string]string{openyurtv1beta1.LabelCurrentNodePool: "east"}
		s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](1)}}}
	})
	tests := map[string]struct {
		oldSpec, newSpec *openyurtv1alpha1.YurtAppDaemonSpec
		want             []string
	}{
		"unchanged fields stay editable": {
			oldSpec: legacy,
			newSpec: with(legacy, func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				s.RevisionHistoryLimit = ptr.To[int32](3)
				deployPod(s).Spec.Containers[0].Image = "coredns:1.12"
			}),
		},
		"a changed field is enforced again": {
			oldSpec: legacy,
			newSpec: with(legacy, func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
				deployPod(s).Spec.NodeSelector["zone"] = "a"
				s.WorkloadTweaks[0].Tweaks.Replicas = ptr.To[int32](2)
			}),
			want: []string{
				"FieldValueRequired spec.workloadTweaks[0]",
				"FieldValueForbidden spec.workloadTemplate.deploymentTemplate.spec.template.spec.nodeSelector",
			},
		},
		"a rule broken anew is enforced": {
			oldSpec: deploymentSpec(),
			newSpec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.NodePoolSelector = nil }),
			want:    []string{"FieldValueRequired spec.nodepoolSelector"},
		},
		"OpenYurt's own rules are not ratcheted": {
			oldSpec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.RevisionHistoryLimit = ptr.To[int32](-1) }),
			newSpec: with(deploymentSpec(), func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.RevisionHistoryLimit = ptr.To[int32](-1) }),
			want:    []string{"FieldValueInvalid spec.revisionHistoryLimit"},
		},
	}
	forEachOwnerKind(t, func(t *testing.T, k testOwnerKind) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				got := testutil.ErrorSummary(ValidateOwner(k.owner("dns", tc.newSpec), k.owner("dns", tc.oldSpec)))
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("errors (-want +got):\n%s", diff)
				}
			})
		}
	})
}

func TestLookupFieldPath(t *testing.T) {
	u := map[string]any{"spec": map[string]any{
		"list":   []any{"a", map[string]any{"k.v/x": "y"}},
		"labels": map[string]any{"apps.openyurt.io/pool-name": "p"},
	}}
	tests := map[string]struct {
		path      string
		want      any
		wantFound bool
	}{
		"map key with dots":  {path: "spec.labels[apps.openyurt.io/pool-name]", want: "p", wantFound: true},
		"list index":         {path: "spec.list[0]", want: "a", wantFound: true},
		"key below an index": {path: "spec.list[1][k.v/x]", want: "y", wantFound: true},
		"index out of range": {path: "spec.list[2]"},
		"missing field":      {path: "spec.other.x"},
		"field of a string":  {path: "spec.list[0].x"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, found := lookupFieldPath(u, tc.path)
			if found != tc.wantFound || !cmp.Equal(got, tc.want) {
				t.Errorf("lookupFieldPath(%q) = %v, %t; want %v, %t", tc.path, got, found, tc.want, tc.wantFound)
			}
		})
	}
}
