package tapp

import (
	"testing"
	"time"

	"github.com/drover-dev/drover/internal/tapp/core"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestExpectationSatisfiedBy(t *testing.T) {
	pod := func(uid, rv string, terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
		if terminating {
			p.DeletionTimestamp = &mt0
		}
		return p
	}
	tests := map[string]struct {
		x    expectation
		pod  *corev1.Pod
		want bool
	}{
		"create: absent":                    {expectation{kind: expectCreate, uid: "a", rv: "10"}, nil, false},
		"create: older version":             {expectation{kind: expectCreate, uid: "a", rv: "10"}, pod("a", "9", false), false},
		"create: the version":               {expectation{kind: expectCreate, uid: "a", rv: "10"}, pod("a", "10", false), true},
		"create: a later version":           {expectation{kind: expectCreate, uid: "a", rv: "10"}, pod("a", "11", false), true},
		"create: another pod of the name":   {expectation{kind: expectCreate, uid: "a", rv: "10"}, pod("b", "3", false), true},
		"write: older version":              {expectation{kind: expectWrite, uid: "a", rv: "10"}, pod("a", "9", false), false},
		"write: pod gone":                   {expectation{kind: expectWrite, uid: "a", rv: "10"}, nil, true},
		"write: opaque versions, equal":     {expectation{kind: expectWrite, uid: "a", rv: "x"}, pod("a", "x", false), true},
		"write: opaque versions, different": {expectation{kind: expectWrite, uid: "a", rv: "x"}, pod("a", "y", false), false},
		"graceful delete: still running":    {expectation{kind: expectDelete, uid: "a", graceful: true}, pod("a", "9", false), false},
		"graceful delete: terminating":      {expectation{kind: expectDelete, uid: "a", graceful: true}, pod("a", "9", true), true},
		"force delete: terminating":         {expectation{kind: expectDelete, uid: "a"}, pod("a", "9", true), false},
		"force delete: gone":                {expectation{kind: expectDelete, uid: "a"}, nil, true},
		"delete: replaced":                  {expectation{kind: expectDelete, uid: "a"}, pod("b", "1", false), true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.x.satisfiedBy(tc.pod); got != tc.want {
				t.Errorf("satisfiedBy = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExpectationsLifecycle(t *testing.T) {
	key := types.NamespacedName{Namespace: testNS, Name: testName}
	e := newExpectations()
	e.expect(key, testUID, 0, &expectation{kind: expectCreate, uid: "p0", rv: "5", at: t0})
	e.expect(key, testUID, 1, &expectation{kind: expectDelete, uid: "p1", at: t0.Add(time.Minute)})

	running := core.Pods{1: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p1", ResourceVersion: "3"}}}
	if got := e.pending(key, testUID, running, t0); len(got) != 2 {
		t.Fatalf("pending = %v, want both", got)
	}
	if got := e.nextExpiry(key, t0); got != ExpectationTTL {
		t.Errorf("nextExpiry = %v, want %v", got, ExpectationTTL)
	}
	// The informer saw p1 deleted.
	e.deletionObserved(key, testUID, "p1", t0)
	if got := e.pending(key, testUID, running, t0); len(got) != 1 || got[0] == nil {
		t.Errorf("pending after the deletion = %v, want only 0", got)
	}
	// Expiry.
	if got := e.pending(key, testUID, core.Pods{}, t0.Add(ExpectationTTL)); len(got) != 0 {
		t.Errorf("pending after the TTL = %v", got)
	}
	// A TApp recreated under the same name starts afresh.
	e.expect(key, testUID, 2, &expectation{kind: expectCreate, uid: "p2", rv: "5", at: t0})
	if got := e.pending(key, "other-uid", core.Pods{}, t0); len(got) != 0 {
		t.Errorf("pending for a new TApp = %v", got)
	}
	e.forget(key)
	if got := e.nextExpiry(key, t0); got != 0 {
		t.Errorf("nextExpiry after forget = %v", got)
	}
}

// TestDeletionSeenBeforeTheExpectation: a pod deleted by someone right after drover created it can be seen
// deleted before the pass records its create expectation; that expectation must not wait for the pod until
// the TTL (the instance would stay missing for five minutes).
func TestDeletionSeenBeforeTheExpectation(t *testing.T) {
	key := types.NamespacedName{Namespace: testNS, Name: testName}
	e := newExpectations()
	e.deletionObserved(key, testUID, "p0", t0)
	e.expect(key, testUID, 0, &expectation{kind: expectCreate, uid: "p0", rv: "5", at: t0})
	if got := e.pending(key, testUID, core.Pods{}, t0); len(got) != 0 {
		t.Errorf("pending = %v, want none: the created pod is already gone", got)
	}
	// Other pods are not affected, and the memory of p0 ends with the TTL.
	e.expect(key, testUID, 1, &expectation{kind: expectCreate, uid: "p1", rv: "5", at: t0})
	if got := e.pending(key, testUID, core.Pods{}, t0); len(got) != 1 {
		t.Errorf("pending = %v, want the expectation of p1", got)
	}
	// A pod of an earlier TApp of that name leaves the current TApp's expectations alone.
	e.deletionObserved(key, "earlier-uid", "p1", t0)
	if got := e.pending(key, testUID, core.Pods{}, t0); len(got) != 1 {
		t.Errorf("pending = %v after an earlier TApp's pod went, want the expectation of p1", got)
	}
	e.deletionObserved(key, testUID, "p9", t0.Add(ExpectationTTL))
	if _, ok := e.apps[key].gone["p0"]; ok {
		t.Error("p0 is still remembered after the TTL")
	}
}
