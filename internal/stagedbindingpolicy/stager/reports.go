package stager

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// maxAwaitingDestinations bounds the destinations an evaluation names as not reported.
const maxAwaitingDestinations = 20

// unreportedDestinations returns the destinations (dests, sorted) that a rowErrors entry of the CombinedStatus
// names, sorted. KubeStellar evaluates every destination of a Binding, and one that has not reported, or
// reported without a field a collector reads (a Deployment with no available replicas has no
// availableReplicas key), fails its row: the row is left out and a rowErrors entry names the cluster. Row
// errors naming clusters that are no longer destinations do not count. cs is read in place, not copied.
func unreportedDestinations(cs *unstructured.Unstructured, dests []string) []string {
	results, _ := cs.Object["results"].([]any)
	var out []string
	for _, r := range results {
		result, _ := r.(map[string]any)
		rowErrors, _ := result["rowErrors"].([]any)
		for _, re := range rowErrors {
			entry, _ := re.(map[string]any)
			wec, _ := entry["wec"].(map[string]any)
			id, _ := wec["clusterId"].(string)
			if _, found := slices.BinarySearch(dests, id); found && !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out
}

// gatedObjects are the kept objects that name a status collector, by what their CombinedStatus allows.
type gatedObjects struct {
	all []*object
	// complete have a CombinedStatus in which no destination has a row error: the gates judge them.
	complete []*object
	// waiting have a CombinedStatus in which some destination has a row error: they wait for its report.
	waiting []*object
	// awaiting have no CombinedStatus yet.
	awaiting []*object
	// unreported are the destinations the waiting objects' row errors name, sorted.
	unreported []string
}

// sortGated picks the CombinedStatus of every kept object that names a status collector and sorts them.
// Row errors count only when judged: a stage without condition and failureCondition needs its objects to
// have a CombinedStatus, not a row for every destination (a Pod never has an availableReplicas to report).
func sortGated(kept []*object, css []*unstructured.Unstructured, bp *controlv1alpha1.BindingPolicy, dests []string,
	judged bool) gatedObjects {
	var g gatedObjects
	for _, o := range kept {
		if len(o.clause.StatusCollectors) > 0 {
			g.all = append(g.all, o)
		}
	}
	selectCombinedStatuses(g.all, css, bp)
	for _, o := range g.all {
		if o.cs == nil {
			g.awaiting = append(g.awaiting, o)
			continue
		}
		var missing []string
		if judged {
			missing = unreportedDestinations(o.cs, dests)
		}
		if len(missing) == 0 {
			g.complete = append(g.complete, o)
			continue
		}
		g.waiting = append(g.waiting, o)
		for _, id := range missing {
			if !slices.Contains(g.unreported, id) {
				g.unreported = append(g.unreported, id)
			}
		}
	}
	slices.Sort(g.unreported)
	return g
}

// withStatus is the number of gated objects with a CombinedStatus.
func (g *gatedObjects) withStatus() int { return len(g.complete) + len(g.waiting) }

// awaitingDestinations is the bounded list of unreported destinations for the status.
func (g *gatedObjects) awaitingDestinations() []string {
	if len(g.unreported) == 0 {
		return nil
	}
	return slices.Clone(g.unreported[:min(len(g.unreported), maxAwaitingDestinations)])
}

// unreportedMessage says which destinations the waiting objects wait for, naming at most five.
func (g *gatedObjects) unreportedMessage() string {
	const most = 5
	names := strings.Join(g.unreported[:min(len(g.unreported), most)], ", ")
	if len(g.unreported) > most {
		names += fmt.Sprintf(" and %d more", len(g.unreported)-most)
	}
	return fmt.Sprintf("awaiting reports from %s (row errors in the CombinedStatus of %s)", names, examples(g.waiting))
}
