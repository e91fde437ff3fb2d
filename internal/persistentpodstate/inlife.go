package persistentpodstate

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/drover-dev/drover/internal/persistentpodstate/core"
)

// inLife remembers persisted-annotation changes seen on live pods: a pod that held the recorded value of a
// key and changed it while it lived. The recorded value then follows the change (a recreated pod with
// another value does not: the first value wins across recreation). The map lives in memory only: after a
// restart the rule degrades to first-wins, the safe direction.
type inLife struct {
	mu sync.Mutex
	m  map[core.InLifeKey]string
}

func newInLife() *inLife { return &inLife{m: map[core.InLifeKey]string{}} }

// observe records that pod uid changed key to value while it lived.
func (l *inLife) observe(uid types.UID, key, value string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[core.InLifeKey{UID: uid, Key: key}] = value
}

// forPods returns the observations about the pods of uids (a copy the caller owns).
func (l *inLife) forPods(uids map[types.UID]bool) map[core.InLifeKey]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out map[core.InLifeKey]string
	for k, v := range l.m {
		if uids[k.UID] {
			if out == nil {
				out = map[core.InLifeKey]string{}
			}
			out[k] = v
		}
	}
	return out
}

// consume drops the observations a pass applied, unless they changed meanwhile.
func (l *inLife) consume(keys []core.InLifeKey, applied map[core.InLifeKey]string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if l.m[k] == applied[k] {
			delete(l.m, k)
		}
	}
}

// forgetPod drops every observation about a deleted pod.
func (l *inLife) forgetPod(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.m {
		if k.UID == uid {
			delete(l.m, k)
		}
	}
}
