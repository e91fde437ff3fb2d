package tapp

import (
	"fmt"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// outcome is the result of one call of boundedDo or slowStart; done is false for calls never made.
type outcome[T any] struct {
	val  T
	err  error
	done bool
}

// boundedDo calls fn(i) for every i in [0, n) with at most limit calls in flight and returns the outcomes
// by index (§17: no unbounded goroutines). A panic in fn becomes that call's error.
func boundedDo[T any](n, limit int, fn func(i int) (T, error)) []outcome[T] {
	out := make([]outcome[T], n)
	if n == 0 {
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(min(limit, n), 1) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				out[i] = call(i, fn)
			}
		})
	}
	wg.Wait()
	return out
}

func call[T any](i int, fn func(i int) (T, error)) (o outcome[T]) {
	defer func() {
		if v := recover(); v != nil {
			o = outcome[T]{err: fmt.Errorf("panic: %v", v), done: true}
		}
	}()
	val, err := fn(i)
	return outcome[T]{val: val, err: err, done: true}
}

// slowStart calls fn(i) for i in [0, n) in batches of 1, 2, 4, … capped at limit, each batch concurrently,
// and stops after a batch in which a call failed (§17). AlreadyExists counts as success.
func slowStart[T any](n, limit int, fn func(i int) (T, error)) []outcome[T] {
	out := make([]outcome[T], n)
	size := 1
	for start := 0; start < n; {
		end := min(start+size, n)
		batch := boundedDo(end-start, end-start, func(i int) (T, error) { return fn(start + i) })
		copy(out[start:end], batch)
		for _, o := range batch {
			if o.err != nil && !apierrors.IsAlreadyExists(o.err) {
				return out
			}
		}
		start = end
		size = min(size*2, max(limit, 1))
	}
	return out
}
