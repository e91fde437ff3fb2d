package persistentpodstate

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/testutil"
)

// TestPreview: a PPS as OpenKruise left it (stored in v1alpha1, generated from the StatefulSet's annotations,
// one record current, one pod Ready but not recorded yet, one record of a scaled-down ordinal), and a PPS of a
// custom kind drover's whitelist does not name. Nothing restarts: pods are kept, records change status only.
func TestPreview(t *testing.T) {
	sts := testutil.MakeStatefulSet("web", testNS, 2).UID(stsUID).
		Annotation(kruisev1beta1.AnnotationAutoGeneratePersistentPodState, "true").
		Annotation(kruisev1beta1.AnnotationRequiredPersistentTopology, hostKey).Obj()
	zone := map[string]string{hostKey: "node-a"}
	generated := testutil.MakePPS("web", testNS, "web").Required(hostKey).
		ControlledBy("apps/v1", "StatefulSet", "web", stsUID).
		State("web-0", "node-a", zone, nil).State("web-5", "node-b", map[string]string{hostKey: "node-b"}, nil).Obj()
	custom := testutil.MakePPS("db", testNS, "db").Target("demo.drover.dev/v1alpha1", "KVStore", "db").Required(hostKey).Obj()
	// OpenKruise 1.9's CRD: v1beta1 is not served, the objects are read in v1alpha1.
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, hub := list.(*kruisev1beta1.PersistentPodStateList); hub {
				return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "apps.kruise.io", Kind: "PersistentPodState"},
					SearchedVersions: []string{"v1beta1"}}
			}
			return c.List(ctx, list, opts...)
		}}).WithObjects(sts, generated, custom,
		testutil.MakeNode("node-a").Label(hostKey, "node-a").Obj(), testutil.MakeNode("node-b").Label(hostKey, "node-b").Obj(),
		testutil.MakePod("web-0", testNS).ControlledBy("apps/v1", "StatefulSet", "web", stsUID).Node("node-a").Ready(true).
			Annotation(kruisev1beta1.AnnotationInjectedPersistentPodState, "web").NodeSelector(hostKey, "node-a").Obj(),
		testutil.MakePod("web-1", testNS).ControlledBy("apps/v1", "StatefulSet", "web", stsUID).Node("node-b").Ready(true).Obj(),
	).Build()

	reports, err := Preview(context.Background(), c, testNS, PreviewOptions{
		WhitelistConfigMap: types.NamespacedName{Namespace: "drover-system", Name: "absent"}})
	if err != nil {
		t.Fatal(err)
	}
	effects := map[string]map[string]preview.Effect{}
	for _, r := range reports {
		effects[r.Owner] = map[string]preview.Effect{}
		for _, it := range r.Items {
			effects[r.Owner][it.Object] = it.Effect
		}
		if len(r.Restarting()) != 0 {
			t.Errorf("%s: restarting %v, want none", r.Owner, r.Restarting())
		}
	}
	want := map[string]map[string]preview.Effect{
		"PersistentPodState ns1/web": {
			"record web-0": preview.Keep, "record web-1": preview.Status, "record web-5": preview.Status,
			"pod web-0": preview.Keep, "pod web-1": preview.Keep,
		},
		"PersistentPodState ns1/db": {"PersistentPodState db": preview.Keep},
	}
	if diff := cmp.Diff(want, effects); diff != "" {
		t.Errorf("effects (-want +got):\n%s", diff)
	}
	var out strings.Builder
	if err := preview.Write(&out, reports, true); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"pod web-1 is Ready on node node-b and not recorded yet", "outside the workload's replicas",
		"KindNotAllowed", "1 pod(s) carry kruise.io/injected-persistent-pod-state"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("the preview does not say %q:\n%s", s, out.String())
		}
	}

	// The annotations now ask for a preferred key too: the generator rewrites the spec (no restart).
	sts.Annotations[kruisev1beta1.AnnotationPreferredPersistentTopology] = zoneKey
	if err := c.Update(context.Background(), sts); err != nil {
		t.Fatal(err)
	}
	reports, err = Preview(context.Background(), c, testNS, PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := reports[1].Items[0]; got.Object != "PersistentPodState web" || got.Effect != preview.Update {
		t.Errorf("first item of %s = %+v, want the generated PPS updated", reports[1].Owner, got)
	}
}

// TestPreviewReadsV1beta1: where the CRD serves v1beta1 (OpenKruise's main branch, drover), the objects are
// read in it.
func TestPreviewReadsV1beta1(t *testing.T) {
	pps := testutil.MakePPS("web", testNS, "web").Required(hostKey).State("web-0", "node-a", map[string]string{hostKey: "node-a"}, nil).Hub()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(pps,
		testutil.MakeStatefulSet("web", testNS, 1).UID(stsUID).Obj(), testutil.MakeNode("node-a").Label(hostKey, "node-a").Obj(),
		testutil.MakePod("web-0", testNS).ControlledBy("apps/v1", "StatefulSet", "web", stsUID).Node("node-a").Ready(true).Obj(),
	).Build()
	reports, err := Preview(context.Background(), c, testNS, PreviewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != 1 || len(reports[0].Items) != 2 || reports[0].Items[0].Effect != preview.Keep {
		t.Errorf("reports = %+v, want web's record and pod kept", reports)
	}
}
