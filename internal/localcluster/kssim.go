package localcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// KssimReportDelay is how long after an object is placed on a cluster kssim has that cluster report its
// status: long enough for a newcomer to see the stages of a StagedBindingPolicy move, short enough for
// tests.
const KssimReportDelay = 3 * time.Second

// startKssim starts kssim, the KubeStellar stand-in: it makes a Binding for every BindingPolicy and keeps
// CombinedStatuses, with every destination cluster reporting each selected Deployment as fully available
// (replicas, readyReplicas, availableReplicas and updatedReplicas equal to spec.replicas) KssimReportDelay
// after it is placed there (until then, and for the other objects it selects, such as the Deployment's
// ReplicaSets and Pods, a cluster counts as not reported, as in KubeStellar); ConfigMaps labelled
// kssim.drover.dev/script=true script other statuses. It plays
// KubeStellar, not drover, so it runs with the admin kubeconfig. Start returns once it has created
// KubeStellar's report namespace, which it does after its caches have synced.
func (c *Cluster) startKssim(ctx context.Context) error {
	if c.opts.SkipKubeStellar || c.opts.SkipKssim {
		return nil
	}
	if !fileExists(c.opts.KssimBinary) {
		return fmt.Errorf("kssim binary %s is missing: build it with `make build` (or set Options.SkipKssim)", c.opts.KssimBinary)
	}
	args := []string{
		"--kubeconfig=" + c.adminKubeconfig(),
		"--auto-status=deployments",
		"--report-delay=" + KssimReportDelay.String(),
	}
	if _, err := c.run(Kssim, c.opts.KssimBinary, append(args, c.opts.KssimArgs...), childEnv()); err != nil {
		return err
	}
	key := client.ObjectKey{Name: controlv1alpha1.ReportNamespace}
	return c.poll(ctx, "kssim to start (log: "+c.LogPath(Kssim)+")", func(ctx context.Context) (bool, error) {
		err := c.Client.Get(ctx, key, &corev1.Namespace{})
		return err == nil, client.IgnoreNotFound(err)
	})
}
