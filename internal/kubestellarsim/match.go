package kubestellarsim

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
)

// excludedGroups are API groups whose objects KubeStellar never selects.
var excludedGroups = map[string]bool{
	controlv1alpha1.GroupVersion.Group: true,
	"flowcontrol.apiserver.k8s.io":     true,
	"discovery.k8s.io":                 true,
	"apiregistration.k8s.io":           true,
	"coordination.k8s.io":              true,
}

// excludedResources are single resources KubeStellar never selects, by group and resource.
var excludedResources = map[[2]string]bool{
	{"", "events"}:                             true,
	{"", "nodes"}:                              true,
	{"", "endpoints"}:                          true,
	{"events.k8s.io", "events"}:                true,
	{"storage.k8s.io", "csistoragecapacities"}: true,
	{"storage.k8s.io", "csinodes"}:             true,
}

// Excluded reports whether KubeStellar never selects objects of the resource, whatever a BindingPolicy says.
func Excluded(group, resource string) bool {
	return excludedGroups[group] || excludedResources[[2]string{group, resource}]
}

// objectInfo is what clause matching and Binding entries need of one workload object.
type objectInfo struct {
	ObjectRef
	// Version is the preferred version of the resource.
	Version         string
	Namespaced      bool
	Labels          map[string]string
	ResourceVersion string
}

// clusterInfo is one inventory entry: a ManagedCluster's name and labels.
type clusterInfo struct {
	Name   string
	Labels map[string]string
}

// namespaceLabels maps a namespace name to its labels; a namespace missing from the map does not exist (or
// could not be read).
type namespaceLabels map[string]map[string]string

// selectDestinations returns the sorted names of the clusters matching at least one selector. An empty list
// selects none, an empty selector every cluster; a selector that does not parse selects none.
func selectDestinations(selectors []metav1.LabelSelector, clusters []clusterInfo) []string {
	parsed := parseSelectors(selectors)
	var names []string
	for _, c := range clusters {
		if anySelectorMatches(parsed, c.Labels) {
			names = append(names, c.Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// parseSelectors converts label selectors, dropping those that do not parse (they match nothing).
func parseSelectors(selectors []metav1.LabelSelector) []labels.Selector {
	parsed := make([]labels.Selector, 0, len(selectors))
	for i := range selectors {
		s, err := metav1.LabelSelectorAsSelector(&selectors[i])
		if err != nil {
			continue
		}
		parsed = append(parsed, s)
	}
	return parsed
}

func anySelectorMatches(selectors []labels.Selector, set map[string]string) bool {
	for _, s := range selectors {
		if s.Matches(labels.Set(set)) {
			return true
		}
	}
	return false
}

// parsedClause is a downsync clause with its label selectors parsed.
type parsedClause struct {
	*controlv1alpha1.DownsyncPolicyClause
	objectSelectors    []labels.Selector
	namespaceSelectors []labels.Selector
}

// parseClauses parses the selectors of every clause once, for matching many objects.
func parseClauses(clauses []controlv1alpha1.DownsyncPolicyClause) []parsedClause {
	out := make([]parsedClause, len(clauses))
	for i := range clauses {
		out[i] = parsedClause{
			DownsyncPolicyClause: &clauses[i],
			objectSelectors:      parseSelectors(clauses[i].ObjectSelectors),
			namespaceSelectors:   parseSelectors(clauses[i].NamespaceSelectors),
		}
	}
	return out
}

// clauseMatches reports whether obj passes one downsync test: every criterion present must hold.
func clauseMatches(c *parsedClause, obj *objectInfo, namespaces namespaceLabels) bool {
	test := &c.DownsyncObjectTest
	if test.APIGroup != nil && *test.APIGroup != obj.Group {
		return false
	}
	if !listAccepts(test.Resources, obj.Resource) || !listAccepts(test.Namespaces, obj.Namespace) ||
		!listAccepts(test.ObjectNames, obj.Name) {
		return false
	}
	if len(test.ObjectSelectors) > 0 && !anySelectorMatches(c.objectSelectors, obj.Labels) {
		return false
	}
	return namespaceSelectorsAccept(test.NamespaceSelectors, c.namespaceSelectors, obj, namespaces)
}

// listAccepts: an empty list or one holding "*" accepts every value, otherwise the value must be listed.
func listAccepts(list []string, value string) bool {
	return len(list) == 0 || slices.Contains(list, "*") || slices.Contains(list, value)
}

// namespaceSelectorsAccept: no selectors, or an empty selector among them, accepts every object (cluster-scoped
// ones included); otherwise the object's Namespace must exist and its labels match one selector (parsed are
// the selectors parsed).
func namespaceSelectorsAccept(selectors []metav1.LabelSelector, parsed []labels.Selector, obj *objectInfo,
	namespaces namespaceLabels) bool {
	if len(selectors) == 0 {
		return true
	}
	for i := range selectors {
		if len(selectors[i].MatchLabels) == 0 && len(selectors[i].MatchExpressions) == 0 {
			return true
		}
	}
	if !obj.Namespaced {
		return false
	}
	nsLabels, found := namespaces[obj.Namespace]
	if !found {
		return false
	}
	return anySelectorMatches(parsed, nsLabels)
}

// mergeModulation folds the modulation of one more matching clause into m: booleans are ORed, collector
// names united (sorted, without duplicates).
func mergeModulation(m *controlv1alpha1.DownsyncModulation, add *controlv1alpha1.DownsyncModulation) {
	m.CreateOnly = m.CreateOnly || add.CreateOnly
	m.WantSingletonReportedState = m.WantSingletonReportedState || add.WantSingletonReportedState
	m.WantMultiWECReportedState = m.WantMultiWECReportedState || add.WantMultiWECReportedState
	if len(add.StatusCollectors) > 0 {
		names := append(slices.Clone(m.StatusCollectors), add.StatusCollectors...)
		slices.Sort(names)
		m.StatusCollectors = slices.Compact(names)
	}
}

// matchObject returns the merged modulation of the clauses obj passes, and whether it passes any.
func matchObject(clauses []parsedClause, obj *objectInfo,
	namespaces namespaceLabels) (controlv1alpha1.DownsyncModulation, bool) {
	var merged controlv1alpha1.DownsyncModulation
	matched := false
	if Excluded(obj.Group, obj.Resource) {
		return merged, false
	}
	for i := range clauses {
		if clauseMatches(&clauses[i], obj, namespaces) {
			matched = true
			mergeModulation(&merged, &clauses[i].DownsyncModulation)
		}
	}
	return merged, matched
}
