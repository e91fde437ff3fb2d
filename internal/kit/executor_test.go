package kit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/drover-dev/drover/internal/testutil"
)

func TestRunIsConcurrentAndBounded(t *testing.T) {
	for name, e := range map[string]Executor{
		"pool":       {Max: 4},
		"slow start": {Max: 4, SlowStart: true},
	} {
		t.Run(name, func(t *testing.T) {
			p := testutil.NewConcurrencyProbe(4, 300*time.Millisecond)
			items := make([]int, 20)
			got := Run(context.Background(), e, items, func(context.Context, int) (struct{}, error) {
				p.Call()
				return struct{}{}, nil
			})
			if p.Peak() != 4 {
				t.Errorf("peak concurrency = %d, want 4 (the cap, reached)", p.Peak())
			}
			for i, a := range got {
				if !a.Done || a.Err != nil {
					t.Errorf("item %d: %+v, want done without error", i, a)
				}
			}
		})
	}
}

func TestRunSlowStartBatches(t *testing.T) {
	boom := errors.New("boom")
	exists := apierrors.NewAlreadyExists(schema.GroupResource{Resource: "pods"}, "x")
	cases := map[string]struct {
		exec     Executor
		failAt   map[int]error
		wantDone int
	}{
		"all succeed":                       {exec: Executor{Max: 4, SlowStart: true}, wantDone: 10},
		"first call fails: nothing else":    {exec: Executor{Max: 4, SlowStart: true}, failAt: map[int]error{0: boom}, wantDone: 1},
		"failure in the third batch (3..6)": {exec: Executor{Max: 4, SlowStart: true}, failAt: map[int]error{4: boom}, wantDone: 7},
		"tolerated failure goes on": {
			exec:   Executor{Max: 4, SlowStart: true, Tolerate: TolerateAlreadyExists},
			failAt: map[int]error{0: exists, 4: exists}, wantDone: 10,
		},
		"without slow start every item is tried": {exec: Executor{Max: 4}, failAt: map[int]error{0: boom}, wantDone: 10},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			items := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
			got := Run(context.Background(), tc.exec, items, func(_ context.Context, i int) (int, error) {
				return i * 10, tc.failAt[i]
			})
			done := 0
			for i, a := range got {
				if !a.Done {
					continue
				}
				done++
				if a.Out != i*10 || !errors.Is(a.Err, tc.failAt[i]) {
					t.Errorf("item %d = %+v, want out %d err %v", i, a, i*10, tc.failAt[i])
				}
			}
			if done != tc.wantDone {
				t.Errorf("attempted %d items, want %d", done, tc.wantDone)
			}
		})
	}
}

func TestRunRecoversPanics(t *testing.T) {
	got := Run(context.Background(), Executor{Max: 2}, []int{0, 1, 2}, func(_ context.Context, i int) (int, error) {
		if i == 1 {
			panic("bad item")
		}
		return i, nil
	})
	if got[1].Err == nil || !got[1].Done {
		t.Fatalf("panicking item: %+v, want done with an error", got[1])
	}
	if diff := cmp.Diff([]int{0, 2}, []int{got[0].Out, got[2].Out}); diff != "" {
		t.Errorf("other items (-want +got):\n%s", diff)
	}
}

func TestRunEmpty(t *testing.T) {
	if got := Run(context.Background(), Executor{SlowStart: true}, []int(nil), func(context.Context, int) (int, error) {
		t.Fatal("called with no items")
		return 0, nil
	}); len(got) != 0 {
		t.Errorf("got %d attempts, want 0", len(got))
	}
}
