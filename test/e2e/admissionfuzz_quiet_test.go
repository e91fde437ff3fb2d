package e2e

// The admission fuzz's quiet phase: the error-loop rounds (nudges, then a watch on the controllers' reconcile
// errors), the objects a controller failed on over the whole run, and the Warning events the controllers
// recorded about the fuzz's objects.

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"

	"github.com/drover-dev/drover/internal/measure"
)

// maxObjectErrors is the bound: no object a controller fails on five times or more.
const maxObjectErrors = 5

func reconcileTotals(samples []measure.Sample) map[string]float64 {
	return perController(samples, "controller_runtime_reconcile_total")
}

// errorLoopRounds runs the two rounds of the error-loop check: each nudges every admitted object and watches
// for cfg.observe. It records each controller's reconcile errors and reconciles per round, and the
// controllers a round's admitted nudges did not reach; then the objects of the "Reconciler error" lines of
// the rounds.
func (r *fuzzRun) errorLoopRounds(watch *managerWatch) {
	rf := &r.figures.ReconcileErrors
	roundsStart := fileSize(cluster.ManagerLog())
	for round := 1; round <= 2; round++ {
		before := watch.sample()
		admitted := r.nudgeAll(round)
		Consistently(cluster.Err).WithTimeout(r.cfg.observe).WithPolling(time.Second).Should(Succeed())
		after := watch.sample()
		rf.Rounds = append(rf.Rounds, subtract(reconcileErrors(after), reconcileErrors(before)))
		reconciles := subtract(reconcileTotals(after), reconcileTotals(before))
		rf.Reconciles = append(rf.Reconciles, reconciles)
		for _, k := range r.kinds {
			for _, c := range k.controllers {
				if admitted[k] > 0 && reconciles[c] == 0 {
					rf.Unreached = append(rf.Unreached, fmt.Sprintf("round %d: %d nudge(s) of %s admitted, and controller %s did not reconcile",
						round, admitted[k], k.kind, c))
				}
			}
		}
	}
	r.explainErrors(erroringObjects(roundsStart))
}

// wholeRunErrors records the objects of every "Reconciler error" line since offset (the start of the spec),
// and those a controller failed on maxObjectErrors times or more.
func (r *fuzzRun) wholeRunErrors(offset int64) {
	rf := &r.figures.ReconcileErrors
	for _, e := range erroringObjects(offset) {
		rf.WholeRun = append(rf.WholeRun, r.describeErroring(e))
		if e.Count >= maxObjectErrors {
			rf.persistent = append(rf.persistent, e)
		}
	}
}

// describeErroring is one line about an object a controller failed on: how often, the first error and the
// admitted requests that wrote the object.
func (r *fuzzRun) describeErroring(e erroringObject) string {
	s := fmt.Sprintf("%s %s %s/%s ×%d: %s", e.Controller, e.Kind, e.Namespace, e.Name, e.Count, e.Error)
	if h := r.history[e.key()]; len(h) > 0 {
		s += "\n        written by: " + strings.Join(h, "\n        then: ")
	}
	return s
}

// quietProblems lists what the quiet phase shows wrong: error loops (a controller failing in both rounds),
// objects failed on maxObjectErrors times or more, and nudges that reached no reconcile.
func (r *fuzzRun) quietProblems() []string {
	rf := r.figures.ReconcileErrors
	var out []string
	for _, c := range sortedKeys(rf.Rounds[0]) {
		if rf.Rounds[0][c] == 0 || rf.Rounds[1][c] == 0 {
			continue
		}
		var objs []string
		for i, e := range rf.erroring {
			if e.Controller == c && len(objs) < 3 {
				objs = append(objs, rf.Objects[i])
			}
		}
		out = append(out, fmt.Sprintf("error loop: controller %s failed %v and %v times in the two rounds, on:\n      %s",
			c, rf.Rounds[0][c], rf.Rounds[1][c], strings.Join(objs, "\n      ")))
	}
	for _, e := range head(rf.persistent, 5) {
		out = append(out, fmt.Sprintf("an object its controller failed on %d times (at most %d allowed): %s",
			e.Count, maxObjectErrors-1, r.describeErroring(e)))
	}
	if n := len(rf.persistent); n > 5 {
		out = append(out, fmt.Sprintf("... and %d more objects failed on %d times or more", n-5, maxObjectErrors))
	}
	for _, u := range rf.Unreached {
		out = append(out, "nudge without effect: "+u)
	}
	return out
}

// warningEvents counts the Warning events (events.k8s.io) about the fuzz's objects (named fz-...) by the
// regarded object's kind and the reason.
func warningEvents() map[string]int {
	var list eventsv1.EventList
	Expect(k8sClient.List(suiteCtx, &list)).To(Succeed())
	out := map[string]int{}
	for _, e := range list.Items {
		if e.Type != "Warning" || !strings.HasPrefix(e.Regarding.Name, "fz-") {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		out[e.Regarding.Kind+"/"+e.Reason] += n
	}
	return out
}

// generatorPPS finds the PersistentPodState a generator error names.
var generatorPPS = regexp.MustCompile(`PersistentPodState ([a-z0-9-]+)/([a-z0-9.-]+)`)

// generatorObject fills in the object of a "Reconciler error" line of the PersistentPodState generator,
// whose requests are no namespace/name (the line names none): its errors name the PersistentPodState, which
// has the workload's namespace and name.
func generatorObject(e *reconcileErrorLine) {
	if e.Controller != "persistentpodstate-generator" || e.Name != "" {
		return
	}
	e.Kind = "StatefulSet"
	if m := generatorPPS.FindStringSubmatch(e.Error); m != nil {
		e.Namespace, e.Name = m[1], m[2]
	}
}
