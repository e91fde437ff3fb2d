package persistentpodstate

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsindex"
	"github.com/drover-dev/drover/internal/persistentpodstate/ppsmetrics"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/testutil"
)

const (
	zoneLabel = "topology.kubernetes.io/zone"
	hostLabel = corev1.LabelHostname
)

// recordedPPS returns the PPS of StatefulSet web in ns with required zone+hostname, a preferred zone term of
// weight 50, and an entry for web-0 on node-a in zone-a.
func recordedPPS(mods ...func(*kruisev1beta1.PersistentPodState)) *kruisev1beta1.PersistentPodState {
	return makePPS("ns", "web-pps", "web", append([]func(*kruisev1beta1.PersistentPodState){
		func(p *kruisev1beta1.PersistentPodState) {
			p.Spec.RequiredPersistentTopology.Keys = []string{zoneLabel, hostLabel}
			p.Spec.PreferredPersistentTopology = []kruisev1beta1.PreferredTopologyTerm{
				{Weight: 50, Preference: kruisev1beta1.NodeTopologyTerm{Keys: []string{zoneLabel}}}}
			p.Status.PodStates = map[string]kruisev1beta1.PodState{"web-0": {
				NodeName: "node-a", NodeTopologyLabels: map[string]string{zoneLabel: "zone-a", hostLabel: "node-a"}}}
		}}, mods...)...)
}

// ownedPod returns the JSON of pod web-0 in ns controlled by the StatefulSet (apps/v1) web, as a kubelet-less
// API server sends it.
func ownedPod(mods ...func(map[string]any)) []byte {
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web-0", "namespace": "ns", "ownerReferences": []any{map[string]any{
			"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u1", "controller": true}}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i", "futureField": 1}}},
	}
	for _, m := range mods {
		m(pod)
	}
	raw, err := json.Marshal(pod)
	if err != nil {
		panic(err)
	}
	return raw
}

func podMeta(key string, value any) func(map[string]any) {
	return func(p map[string]any) { p["metadata"].(map[string]any)[key] = value }
}

func podSpec(key string, value any) func(map[string]any) {
	return func(p map[string]any) { p["spec"].(map[string]any)[key] = value }
}

func owner(apiVersion, kind, name string) func(map[string]any) {
	return podMeta("ownerReferences", []any{map[string]any{
		"apiVersion": apiVersion, "kind": kind, "name": name, "uid": "u1", "controller": true}})
}

// liveNodes is the API reader of the node check: it answers every Get with err (nil: found), or blocks until
// the context ends.
type liveNodes struct {
	client.Reader
	err   error
	block bool
	gets  int
}

func (l *liveNodes) Get(ctx context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	l.gets++
	if l.block {
		<-ctx.Done()
		return ctx.Err()
	}
	return l.err
}

var nodeNotFound = apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "node-a")

// eventLog records the events' regarding and related objects beside the fake recorder's messages.
type eventLog struct {
	*events.FakeRecorder
	objects []string
}

func (e *eventLog) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	e.objects = append(e.objects, objName(regarding)+" "+objName(related)+" "+action)
	e.FakeRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

func objName(o runtime.Object) string {
	if m, ok := o.(metav1.Object); ok {
		return m.GetName()
	}
	return "?"
}

func (e *eventLog) reasons() []string {
	var out []string
	for {
		select {
		case ev := <-e.Events:
			out = append(out, ev[:len("Warning RecordedNodeGone")])
		default:
			return out
		}
	}
}

// admissionCounts reads the pod webhook's counters.
func admissionCounts() map[string]float64 {
	out := map[string]float64{
		"conflicts": promtestutil.ToFloat64(ppsmetrics.NodeSelectorConflicts),
		"skips":     promtestutil.ToFloat64(ppsmetrics.MissingNodeSkips),
	}
	for _, r := range []string{ppsmetrics.AdmissionInjected, ppsmetrics.AdmissionNoState, ppsmetrics.AdmissionNotApplicable, ppsmetrics.AdmissionError} {
		out[r] = promtestutil.ToFloat64(ppsmetrics.PodAdmissions.WithLabelValues(r))
	}
	return out
}

// countsSince returns the counters that changed since before.
func countsSince(before map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range admissionCounts() {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

type podCase struct {
	raw       []byte
	namespace string // of the request; "ns" when empty
	stored    []client.Object
	listErr   error
	live      *liveNodes
	skipOff   bool
	allowed   func(schema.GroupKind) bool
	dryRun    bool
	// wantPaths are the patch's operations; wantPod the patched pod's steered fields (nil: no patch).
	wantPaths  []string
	wantPod    *corev1.Pod
	wantEvents []string
	wantCounts map[string]float64
}

func TestPodPersistentPodStateHandler(t *testing.T) {
	injectedPod := func(selector map[string]string, annotations map[string]string, terms ...corev1.PreferredSchedulingTerm) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}, Spec: corev1.PodSpec{NodeSelector: selector}}
		if len(terms) > 0 {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: terms}}
		}
		return p
	}
	zoneTerm := corev1.PreferredSchedulingTerm{Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: zoneLabel, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}}}}
	diskTerm := corev1.PreferredSchedulingTerm{Weight: 10, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}}
	injected := map[string]string{kruisev1beta1.AnnotationInjectedPersistentPodState: "web-pps"}
	both := map[string]string{zoneLabel: "zone-a", hostLabel: "node-a"}
	zoneOnly := map[string]string{zoneLabel: "zone-a"}
	fullPaths := []string{"add /metadata/annotations", "add /spec/affinity", "add /spec/nodeSelector"}
	nodeA := testutil.MakeNode("node-a").Obj()
	nodeA.Spec.Unschedulable = true // cordoned and NotReady: still there
	custom := schema.GroupKind{Group: "example.com", Kind: "Database"}

	tests := map[string]podCase{
		"recorded pod is injected": {
			raw: ownedPod(), wantPaths: fullPaths, wantPod: injectedPod(both, injected, zoneTerm),
			wantCounts: map[string]float64{"injected": 1},
		},
		"merged with the pod's own nodeSelector, terms and annotations, key by key": {
			raw: ownedPod(podMeta("annotations", map[string]any{"a": "b"}), podSpec("nodeSelector", map[string]any{"disk": "ssd"}),
				podSpec("affinity", map[string]any{"nodeAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{
					map[string]any{"weight": 10, "preference": map[string]any{"matchExpressions": []any{
						map[string]any{"key": "disk", "operator": "In", "values": []any{"ssd"}}}}}}}})),
			wantPaths: []string{"add /metadata/annotations/kruise.io~1injected-persistent-pod-state",
				"add /spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution/-",
				"add /spec/nodeSelector/kubernetes.io~1hostname", "add /spec/nodeSelector/topology.kubernetes.io~1zone"},
			wantPod: injectedPod(map[string]string{"disk": "ssd", zoneLabel: "zone-a", hostLabel: "node-a"},
				map[string]string{"a": "b", kruisev1beta1.AnnotationInjectedPersistentPodState: "web-pps"}, diskTerm, zoneTerm),
			wantCounts: map[string]float64{"injected": 1},
		},
		"parents present but empty or partial: entries added under them": {
			raw: ownedPod(podMeta("annotations", map[string]any{}), podSpec("nodeSelector", map[string]any{}),
				podSpec("affinity", map[string]any{"podAffinity": map[string]any{}})),
			wantPaths: []string{"add /metadata/annotations/kruise.io~1injected-persistent-pod-state", "add /spec/affinity/nodeAffinity",
				"add /spec/nodeSelector/kubernetes.io~1hostname", "add /spec/nodeSelector/topology.kubernetes.io~1zone"},
			wantPod: func() *corev1.Pod {
				p := injectedPod(both, injected, zoneTerm)
				p.Spec.Affinity.PodAffinity = &corev1.PodAffinity{}
				return p
			}(),
			wantCounts: map[string]float64{"injected": 1},
		},
		"required node affinity only, nulls elsewhere: the preferred list added whole": {
			raw: ownedPod(podMeta("annotations", nil), podSpec("nodeSelector", nil),
				podSpec("affinity", map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
					"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
						map[string]any{"key": "disk", "operator": "In", "values": []any{"ssd"}}}}}}}})),
			wantPaths: []string{"add /metadata/annotations",
				"add /spec/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution", "add /spec/nodeSelector"},
			wantPod: func() *corev1.Pod {
				p := injectedPod(both, injected, zoneTerm)
				p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{diskTerm.Preference}}
				return p
			}(),
			wantCounts: map[string]float64{"injected": 1},
		},
		// OpenKruise's pod webhook steers the same way (the same annotation, the required keys as nodeSelector
		// entries, one In term per preferred term): a pod it steered before drover's webhook saw it gets
		// nothing twice.
		"a pod OpenKruise steered already: nothing added twice": {
			raw: ownedPod(podMeta("annotations", map[string]any{kruisev1beta1.AnnotationInjectedPersistentPodState: "web-pps"}),
				podSpec("nodeSelector", map[string]any{zoneLabel: "zone-a", hostLabel: "node-a"}),
				podSpec("affinity", map[string]any{"nodeAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{
					map[string]any{"weight": 50, "preference": map[string]any{"matchExpressions": []any{
						map[string]any{"key": zoneLabel, "operator": "In", "values": []any{"zone-a"}}}}}}}})),
			wantPod: injectedPod(both, injected, zoneTerm), wantCounts: map[string]float64{"no_state": 1},
		},
		"a stale injected annotation is overwritten": {
			raw: ownedPod(podMeta("annotations", map[string]any{kruisev1beta1.AnnotationInjectedPersistentPodState: "old-pps"})),
			wantPaths: []string{"add /metadata/annotations/kruise.io~1injected-persistent-pod-state", "add /spec/affinity",
				"add /spec/nodeSelector"},
			wantPod: injectedPod(both, injected, zoneTerm), wantCounts: map[string]float64{"injected": 1},
		},
		"namespace taken from the request": {
			raw: ownedPod(podMeta("namespace", "")), wantPaths: fullPaths, wantPod: injectedPod(both, injected, zoneTerm),
			wantCounts: map[string]float64{"injected": 1},
		},
		"conflicting nodeSelector keeps the pod's value": {
			raw:        ownedPod(podSpec("nodeSelector", map[string]any{zoneLabel: "zone-b"})),
			wantPaths:  []string{"add /metadata/annotations", "add /spec/affinity", "add /spec/nodeSelector/kubernetes.io~1hostname"},
			wantPod:    injectedPod(map[string]string{zoneLabel: "zone-b", hostLabel: "node-a"}, injected, zoneTerm),
			wantCounts: map[string]float64{"injected": 1, "conflicts": 1},
		},
		"no PPS for the workload": {
			raw: ownedPod(owner("apps/v1", "StatefulSet", "other")), wantCounts: map[string]float64{"not_applicable": 1},
		},
		"a PPS being deleted is ignored": {
			raw: ownedPod(), stored: []client.Object{recordedPPS(deletingPPS)}, wantCounts: map[string]float64{"not_applicable": 1},
		},
		"no entry for the pod": {
			raw: ownedPod(podMeta("name", "web-7")), wantCounts: map[string]float64{"no_state": 1},
		},
		"generateName pod": {
			raw:        ownedPod(podMeta("name", ""), podMeta("generateName", "web-")),
			wantCounts: map[string]float64{"not_applicable": 1},
		},
		"bare pod": {
			raw: ownedPod(podMeta("ownerReferences", nil)), wantCounts: map[string]float64{"not_applicable": 1},
		},
		"unsupported owner kind": {
			raw: ownedPod(owner("apps/v1", "ReplicaSet", "web")), wantCounts: map[string]float64{"not_applicable": 1},
		},
		"whitelisted owner kind": {
			raw:       ownedPod(owner("example.com/v2", "Database", "web")),
			stored:    []client.Object{recordedPPS(targetRef("example.com/v1", "Database", "web"))},
			allowed:   func(gk schema.GroupKind) bool { return gk == custom },
			wantPaths: fullPaths, wantPod: injectedPod(both, injected, zoneTerm),
			wantCounts: map[string]float64{"injected": 1},
		},
		"cache error: admitted unchanged": {
			raw: ownedPod(), listErr: errors.New("index broken"), wantCounts: map[string]float64{"error": 1},
		},
		"node gone confirmed: hostname dropped with an event": {
			raw: ownedPod(), stored: []client.Object{recordedPPS()}, live: &liveNodes{err: nodeNotFound},
			wantPaths: fullPaths, wantPod: injectedPod(zoneOnly, injected, zoneTerm),
			wantEvents: []string{"Warning RecordedNodeGone"},
			wantCounts: map[string]float64{"injected": 1, "skips": 1},
		},
		"node gone on a dry run: no event": {
			raw: ownedPod(), stored: []client.Object{recordedPPS()}, live: &liveNodes{err: nodeNotFound}, dryRun: true,
			wantPaths: fullPaths, wantPod: injectedPod(zoneOnly, injected, zoneTerm),
			wantCounts: map[string]float64{"injected": 1, "skips": 1},
		},
		"node gone but the skip is off: key kept": {
			raw: ownedPod(), stored: []client.Object{recordedPPS()}, live: &liveNodes{err: nodeNotFound}, skipOff: true,
			wantPaths: fullPaths, wantPod: injectedPod(both, injected, zoneTerm),
			wantCounts: map[string]float64{"injected": 1},
		},
		"node cordoned and in the cache: key kept": {
			raw: ownedPod(), stored: []client.Object{recordedPPS(), nodeA}, live: &liveNodes{err: nodeNotFound},
			wantPaths: fullPaths, wantPod: injectedPod(both, injected, zoneTerm),
			wantCounts: map[string]float64{"injected": 1},
		},
		"live read API error: key kept": {
			raw: ownedPod(), stored: []client.Object{recordedPPS()}, live: &liveNodes{err: apierrors.NewServiceUnavailable("etcd")},
			wantPaths: fullPaths, wantPod: injectedPod(both, injected, zoneTerm),
			wantCounts: map[string]float64{"injected": 1},
		},
		"live read timeout: key kept": {
			raw: ownedPod(), stored: []client.Object{recordedPPS()}, live: &liveNodes{block: true},
			wantPaths: fullPaths, wantPod: injectedPod(both, injected, zoneTerm),
			wantCounts: map[string]float64{"injected": 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { runPodCase(t, tc) })
	}
}

func runPodCase(t *testing.T, tc podCase) {
	t.Helper()
	stored := tc.stored
	if stored == nil {
		stored = []client.Object{recordedPPS()}
	}
	var hooks interceptor.Funcs
	if tc.listErr != nil {
		hooks.List = func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return tc.listErr
		}
	}
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: stored, Indexes: ppsindex.Indexes(), Hooks: hooks})
	live := tc.live
	if live == nil {
		live = &liveNodes{err: errors.New("no answer from the API server")}
	}
	rec := &eventLog{FakeRecorder: events.NewFakeRecorder(10)}
	wh := newPodPersistentPodStateWebhook(scheme.New(), WebhookOptions{
		Allowed: tc.allowed, Reader: fc.Client, APIReader: live, Recorder: rec,
		SkipMissingNode: !tc.skipOff, NodeCheckTimeout: 20 * time.Millisecond,
	})
	before := admissionCounts()
	resp := wh.Handle(context.Background(), podRequest(tc.raw, tc.namespace, tc.dryRun))
	if !resp.Allowed {
		t.Fatalf("denied: %v", resp.Result)
	}
	if diff := cmp.Diff(tc.wantPaths, testutil.PatchPaths(resp)); diff != "" {
		t.Errorf("patch operations (-want +got):\n%s", diff)
	}
	if tc.wantPod != nil {
		got := &corev1.Pod{}
		if err := json.Unmarshal(testutil.ApplyPatches(t, tc.raw, resp), got); err != nil {
			t.Fatal(err)
		}
		steeredOnly := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: got.Annotations},
			Spec: corev1.PodSpec{NodeSelector: got.Spec.NodeSelector, Affinity: got.Spec.Affinity}}
		if diff := cmp.Diff(tc.wantPod, steeredOnly); diff != "" {
			t.Errorf("patched pod (-want +got):\n%s", diff)
		}
	}
	if diff := cmp.Diff(tc.wantEvents, rec.reasons()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if len(tc.wantEvents) > 0 && !slices.Equal(rec.objects, []string{"web-pps web-0 InjectPod"}) {
		t.Errorf("events regard %q, want the PPS, related to the pod, action InjectPod", rec.objects)
	}
	if diff := cmp.Diff(tc.wantCounts, countsSince(before)); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
}

func podRequest(raw []byte, namespace string, dryRun bool) admission.Request {
	if namespace == "" {
		namespace = "ns"
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "1", Operation: admissionv1.Create, Namespace: namespace,
		Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Object:   runtime.RawExtension{Raw: raw}, DryRun: ptr.To(dryRun),
	}}
}

func TestPodPersistentPodStateHandlerIgnoresOtherRequests(t *testing.T) {
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: []client.Object{recordedPPS()}, Indexes: ppsindex.Indexes()})
	wh := newPodPersistentPodStateWebhook(scheme.New(), WebhookOptions{Reader: fc.Client})
	tests := map[string]func(*admission.Request){
		"update":      func(r *admission.Request) { r.Operation = admissionv1.Update; r.OldObject = r.Object },
		"subresource": func(r *admission.Request) { r.SubResource = "ephemeralcontainers" },
	}
	for name, mod := range tests {
		t.Run(name, func(t *testing.T) {
			req := podRequest(ownedPod(), "", false)
			mod(&req)
			if resp := wh.Handle(context.Background(), req); !resp.Allowed || len(resp.Patches) != 0 {
				t.Errorf("response = %v with patches %v, want allowed unchanged", resp.Result, testutil.PatchPaths(resp))
			}
		})
	}
}

func TestPodPersistentPodStateHandlerUndecodablePod(t *testing.T) {
	fc := testutil.NewFakeClient(testutil.FakeClientOptions{Indexes: ppsindex.Indexes()})
	wh := newPodPersistentPodStateWebhook(scheme.New(), WebhookOptions{Reader: fc.Client})
	raw := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0"},"spec":{"priority":"high"}}`)
	resp := wh.Handle(context.Background(), podRequest(raw, "", false))
	if diff := cmp.Diff([]string{"spec.priority"}, testutil.DeniedFields(t, resp)); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
}
