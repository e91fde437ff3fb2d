package persistentpodstate

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
	"github.com/drover-dev/drover/internal/scheme"
)

// listOnly is a reader that answers every List with the same PersistentPodStates without copying them, as
// the manager's cache does for a list with client.UnsafeDisableDeepCopy: the benchmark measures the
// handler, not the fake client's deep copy of a 1.3 MB object.
type listOnly struct {
	client.Reader
	items []kruisev1beta1.PersistentPodState
}

func (l listOnly) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	return meta.SetList(list, toObjects(l.items))
}

func toObjects(items []kruisev1beta1.PersistentPodState) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

// BenchmarkPodWebhook5000 admits pod web-0 steered by a PPS holding 5,000 records with two keys: the
// handler's own cost per pod create, whatever the PPS's size.
func BenchmarkPodWebhook5000(b *testing.B) {
	pps := recordedPPS()
	for i := range 5000 {
		node := fmt.Sprintf("node-%03d", i%100)
		pps.Status.PodStates[fmt.Sprintf("web-%d", i)] = kruisev1beta1.PodState{NodeName: node,
			NodeTopologyLabels: map[string]string{zoneLabel: "zone-a", hostLabel: node}}
	}
	wh := newPodPersistentPodStateWebhook(scheme.New(), WebhookOptions{
		Reader: listOnly{items: []kruisev1beta1.PersistentPodState{*pps}}, SkipMissingNode: false,
	})
	req := podRequest(ownedPod(), "", false)
	b.ReportAllocs()
	for b.Loop() {
		if resp := wh.Handle(context.Background(), req); !resp.Allowed || len(resp.Patches) == 0 {
			b.Fatalf("not steered: %+v", resp.Result)
		}
	}
}
