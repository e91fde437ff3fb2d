package tapp

import (
	"strconv"
	"sync"
	"time"

	"github.com/drover-dev/drover/internal/tapp/core"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ExpectationTTL is how long an expectation waits for the cache to show a write's effect before it is
// dropped.
const ExpectationTTL = 5 * time.Minute

// expectKind is what an expectation waits for.
type expectKind int

const (
	// expectCreate: the created pod must appear in the cache (at or after the recorded resourceVersion).
	expectCreate expectKind = iota
	// expectWrite: the cache must show the pod at or after the resourceVersion a write returned.
	expectWrite
	// expectDelete: the pod must be gone from the cache, or (graceful) terminating.
	expectDelete
)

// expectation is one write of a pass whose effect the cache has not shown yet. While it is pending,
// the id is not acted on and its pod is taken from the expectation, not from the stale cache.
type expectation struct {
	kind expectKind
	// uid is the pod's UID; rv the resourceVersion the write returned (create and write).
	uid types.UID
	rv  string
	// graceful marks a graceful delete: a terminating pod satisfies it.
	graceful bool
	// pod is the pod as this pass left it (the post-action view); nil when the write removed it.
	pod *corev1.Pod
	// at is when the write was made; the expectation expires ExpectationTTL later.
	at time.Time
}

// satisfiedBy reports whether the cached pod of the id (nil when absent) shows the write's effect.
func (x *expectation) satisfiedBy(pod *corev1.Pod) bool {
	switch x.kind {
	case expectDelete:
		return pod == nil || pod.UID != x.uid || (x.graceful && pod.DeletionTimestamp != nil)
	case expectCreate:
		return pod != nil && (pod.UID != x.uid || rvAtLeast(pod.ResourceVersion, x.rv))
	default:
		return pod == nil || pod.UID != x.uid || rvAtLeast(pod.ResourceVersion, x.rv)
	}
}

// rvAtLeast compares resourceVersions. They are opaque strings in the API, but every apiserver (etcd3) and
// the fake client use decimal integers; anything else only satisfies by equality.
func rvAtLeast(have, want string) bool {
	h, errH := strconv.ParseUint(have, 10, 64)
	w, errW := strconv.ParseUint(want, 10, 64)
	if errH != nil || errW != nil {
		return have == want
	}
	return h >= w
}

// appExpectations are the expectations of one TApp, by instance id.
type appExpectations struct {
	uid  types.UID
	byID map[int]*expectation
	// gone remembers the pods seen deleted, with when: a pod deleted right after its create (by someone
	// else) can be seen deleted before the pass that created it records its expectation, which would then
	// wait for a pod that never comes until ExpectationTTL.
	gone map[types.UID]time.Time
}

// expectations holds the pending expectations of every TApp. Reconciles of one TApp never run
// concurrently, but pod delete events arrive on other goroutines, hence the lock.
type expectations struct {
	mu   sync.Mutex
	apps map[types.NamespacedName]*appExpectations
}

func newExpectations() *expectations {
	return &expectations{apps: map[types.NamespacedName]*appExpectations{}}
}

// of returns the expectations of a TApp, resetting them when the UID changed (a new TApp of the same name).
// The caller holds the lock.
func (e *expectations) of(key types.NamespacedName, uid types.UID) *appExpectations {
	a := e.apps[key]
	if a == nil || a.uid != uid {
		a = &appExpectations{uid: uid, byID: map[int]*expectation{}, gone: map[types.UID]time.Time{}}
		e.apps[key] = a
	}
	return a
}

// expect records an expectation for an id, replacing an older one. An expectation about a pod already seen
// deleted is satisfied at once: only the older one is dropped.
func (e *expectations) expect(key types.NamespacedName, appUID types.UID, id int, x *expectation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.of(key, appUID)
	if _, gone := a.gone[x.uid]; gone && x.uid != "" {
		delete(a.byID, id)
		return
	}
	a.byID[id] = x
}

// pending checks the expectations of a TApp against the cached pods: satisfied and expired ones are
// dropped; the others are returned by id.
func (e *expectations) pending(key types.NamespacedName, appUID types.UID, cached core.Pods, now time.Time) map[int]*expectation {
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.of(key, appUID)
	out := map[int]*expectation{}
	for id, x := range a.byID {
		if x.satisfiedBy(cached[id]) || now.Sub(x.at) >= ExpectationTTL {
			delete(a.byID, id)
			continue
		}
		out[id] = x
	}
	return out
}

// deletionObserved satisfies the expectations about a pod the informer saw deleted (appUID is its TApp's):
// whatever was expected of it, the cache will not show it again. The pod is remembered for ExpectationTTL,
// for a pass that wrote it and has not recorded its expectation yet.
func (e *expectations) deletionObserved(key types.NamespacedName, appUID, podUID types.UID, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.apps[key]
	switch {
	case a == nil:
		a = e.of(key, appUID)
	case a.uid != appUID:
		return // a pod of an earlier TApp of that name: nothing of the current one is about it
	}
	for id, x := range a.byID {
		if x.uid == podUID {
			delete(a.byID, id)
		}
	}
	for uid, at := range a.gone {
		if now.Sub(at) >= ExpectationTTL {
			delete(a.gone, uid)
		}
	}
	a.gone[podUID] = now
}

// forget drops the expectations of a TApp that no longer exists.
func (e *expectations) forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.apps, key)
}

// nextExpiry returns how long until the first pending expectation of a TApp expires; 0 when none is pending.
func (e *expectations) nextExpiry(key types.NamespacedName, now time.Time) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	a := e.apps[key]
	if a == nil {
		return 0
	}
	var next time.Duration
	for _, x := range a.byID {
		left := max(x.at.Add(ExpectationTTL).Sub(now), time.Second)
		if next == 0 || left < next {
			next = left
		}
	}
	return next
}
