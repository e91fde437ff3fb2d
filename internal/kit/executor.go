package kit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Executor runs the writes of one pass concurrently and bounded: never more than Max calls in flight, and
// a panic in a call becomes that call's error instead of killing the manager.
//
// With SlowStart the items go in batches of 1, 2, 4, … capped at Max, and after a batch in which a call
// failed the remaining items are not attempted: a systematic failure (a quota, a webhook refusing every
// object) costs one or two calls, not hundreds. Tolerate names the failures that do not stop the batches
// (for example AlreadyExists, or a name held by a foreign object, which concern only their own item).
// Without SlowStart every item is attempted.
type Executor struct {
	// Max is the most calls in flight; values below 1 mean 1.
	Max int
	// SlowStart sends the items in doubling batches and stops after a batch with an intolerable failure.
	SlowStart bool
	// Tolerate reports whether a failure lets the next batch start; nil tolerates none.
	Tolerate func(error) bool
}

// Attempt is the outcome of one item. Done is false for an item that was not attempted because an earlier
// slow-start batch failed.
type Attempt[O any] struct {
	Out  O
	Err  error
	Done bool
}

// TolerateAlreadyExists tolerates a create that found its object already there.
func TolerateAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// Run calls fn for every item as e says and returns the attempts in the order of items.
func Run[I, O any](ctx context.Context, e Executor, items []I, fn func(context.Context, I) (O, error)) []Attempt[O] {
	out := make([]Attempt[O], len(items))
	limit := max(e.Max, 1)
	if !e.SlowStart {
		pool(ctx, items, out, limit, fn)
		return out
	}
	size := 1
	for start := 0; start < len(items); {
		end := min(start+size, len(items))
		pool(ctx, items[start:end], out[start:end], limit, fn)
		for _, a := range out[start:end] {
			if a.Err != nil && (e.Tolerate == nil || !e.Tolerate(a.Err)) {
				return out
			}
		}
		start = end
		size = min(size*2, limit)
	}
	return out
}

// pool calls fn for each item with at most limit workers, writing each attempt at its item's index.
func pool[I, O any](ctx context.Context, items []I, out []Attempt[O], limit int, fn func(context.Context, I) (O, error)) {
	n := len(items)
	if n == 0 {
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(limit, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				out[i] = call(ctx, items[i], fn)
			}
		})
	}
	wg.Wait()
}

func call[I, O any](ctx context.Context, item I, fn func(context.Context, I) (O, error)) (a Attempt[O]) {
	defer func() {
		if v := recover(); v != nil {
			a = Attempt[O]{Err: fmt.Errorf("panic: %v", v), Done: true}
		}
	}()
	o, err := fn(ctx, item)
	return Attempt[O]{Out: o, Err: err, Done: true}
}
