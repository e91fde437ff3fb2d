package kubestellarsim

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
)

// startWorkers runs the Binding and CombinedStatus workers until their queues shut down.
func (s *Sim) startWorkers(ctx context.Context, wg *sync.WaitGroup) {
	for range s.cfg.Workers {
		wg.Go(func() {
			runWorker(ctx, s.bindingQ, s.log.WithName("binding"), func(ctx context.Context, name string) (time.Duration, error) {
				return 0, s.syncPolicy(ctx, name)
			})
		})
		wg.Go(func() {
			runWorker(ctx, s.statusQ, s.log.WithName("status"), s.syncStatus)
		})
	}
}

// runWorker processes items until the queue shuts down. A failed item is retried with backoff: conflicts
// and not-yet-cached objects quietly, other errors with a log line. A positive duration asks to look at
// the item again after that long.
func runWorker[K comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[K], log logr.Logger,
	process func(context.Context, K) (time.Duration, error)) {
	for {
		item, shutdown := q.Get()
		if shutdown {
			return
		}
		after, err := process(ctx, item)
		switch {
		case err != nil && ctx.Err() != nil:
			q.Forget(item)
		case err != nil:
			if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
				log.V(1).Info("Retrying after a stale read", "item", item, "reason", err.Error())
			} else {
				log.Error(err, "Retrying", "item", item)
			}
			q.AddRateLimited(item)
		case after > 0:
			q.Forget(item)
			q.AddAfter(item, after)
		default:
			q.Forget(item)
		}
		q.Done(item)
	}
}
