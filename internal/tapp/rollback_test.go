package tapp

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/tapp/core"
)

// A rollback puts TKEStack's hash labels back: on the pods drover restamped (from the annotation that kept
// them) and on the pods drover created from the same template; a pod of a template TKEStack never hashed is
// reported as one TKEStack will recreate.
func TestRollbackRestoresUpstreamHashes(t *testing.T) {
	app := makeTApp(func(a *tkestackv1.TApp) { a.UID = types.UID("tapp-uid") })
	tpl, ok := core.NewPass(app, core.Options{}).TemplateByName(tkestackv1.DefaultTemplateName)
	if !ok {
		t.Fatal("no default template")
	}
	restamped := core.Restamp(upstreamPod(app, "0", "nginx:1", true), tpl)
	created := upstreamPod(app, "1", "nginx:1", true)
	created.Labels[tkestackv1.TAppHashKey], created.Labels[tkestackv1.TAppUniqHashKey] = tpl.Hash, tpl.UniqHash
	changed := upstreamPod(app, "2", "nginx:2", true)
	changed.Labels[tkestackv1.TAppHashKey], changed.Labels[tkestackv1.TAppUniqHashKey] = "v1-00000000000000aa", "v1-00000000000000bb"
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(app, restamped, created, changed).Build()
	ctx := context.Background()

	reports, restores, err := PlanRollback(ctx, c, "ns")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range reports[0].Items {
		got = append(got, string(it.Effect)+" "+it.Object)
	}
	if diff := cmp.Diff([]string{"relabel pod web-0", "relabel pod web-1", "recreate pod web-2"}, got); diff != "" {
		t.Errorf("items (-want +got):\n%s", diff)
	}
	if err := ApplyRollback(ctx, c, restores); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-0", "web-1"} {
		pod := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, pod); err != nil {
			t.Fatal(err)
		}
		if pod.Labels[tkestackv1.TAppHashKey] != "8412749301923" || pod.Labels[tkestackv1.TAppUniqHashKey] != "5523019277" {
			t.Errorf("%s: hash labels %v, want TKEStack's", name, pod.Labels)
		}
		if _, ok := pod.Annotations[tkestackv1.UpstreamHashesKey]; ok {
			t.Errorf("%s still carries %s", name, tkestackv1.UpstreamHashesKey)
		}
	}
}
