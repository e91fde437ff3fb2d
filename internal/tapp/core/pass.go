package core

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
)

// Pass holds what one reconcile pass derives from the TApp alone: effective settings, resolved and hashed
// templates and the desired sets. Build it once per pass with NewPass, then call Plan on the observed pods
// and Status on the post-action view. A Pass is read-only after construction and safe for concurrent use.
type Pass struct {
	// App is the TApp as read from the cache. It is never modified.
	App *tkestackv1.TApp
	// Settings is the spec with defaults applied in memory.
	Settings Settings
	// Desired is the partition of [0, replicas).
	Desired Desired
	// Issues are the spec-level problems found (InvalidSpec); Plan includes them in its issues.
	Issues []Issue

	templates map[string]*Template
	selector  labels.Selector
}

// Observation is what the reconciler observed, or the post-action view it built.
type Observation struct {
	// Pods are the owned, well-formed pods by id (Classified.Pods, or the post-action view).
	Pods Pods
	// Malformed are the owned pods ClassifyPods rejected; each is reported as MalformedPod.
	Malformed []*corev1.Pod
	// NameTaken holds ids whose pod name is taken by a pod that is not a well-formed owned pod
	// (Classified.NameTaken plus pods of other owners found by name).
	NameTaken map[int]bool
	// Expecting holds ids with an unsatisfied expectation: they are not acted on and are unavailable.
	Expecting map[int]bool
	// Nodes holds the cached nodes that terminating pods are bound to; a node name missing from the map is
	// absent from the cache.
	Nodes map[string]*corev1.Node
	// Now is the pass's clock reading (minReadySeconds, transition times).
	Now time.Time
}

// NewPass prepares a pass for a TApp (which must not be nil). opts carries manager-level defaults.
func NewPass(app *tkestackv1.TApp, opts Options) *Pass {
	s, issues := settingsOf(app, opts)
	sel, derived, selIssue := selectorOf(&app.Spec)
	var parsed labels.Selector
	if selIssue != nil {
		issues = append(issues, *selIssue)
		s.Blocked = true
	} else {
		s.Selector, s.SelectorDerived = sel, derived
		parsed, _ = metav1.LabelSelectorAsSelector(sel) // validated by selectorOf
	}
	replicas := app.Spec.Replicas
	if replicas > tkestackv1.MaxReplicas {
		// The CRD schema refuses this; a TApp stored under an older schema must not make the manager
		// allocate per instance without bound.
		issues = append(issues, invalidSpec("spec.replicas", fmt.Sprintf("%d is more than the %d instances a TApp can hold", replicas, tkestackv1.MaxReplicas)))
		s.Blocked = true
		replicas = tkestackv1.MaxReplicas
	}
	// An updateStrategy.template that names no template is not a failure: upstream TApp let a user remove the
	// template it names (and wrote the first defaultTemplateName there itself), and then rolled no instance
	// on the rolling path, every outdated one on the force path. drover does the same: no template is the
	// rolling template. The webhook refuses the value on CREATE and warns on UPDATE.
	templates, tplIssues := resolveTemplates(&app.Spec, s.RollingTemplateName, parsed)
	issues = append(issues, tplIssues...)
	return &Pass{
		App:       app,
		Settings:  s,
		Desired:   computeDesired(replicas, s.Killed, app.Status.Statuses, app.Status.AppStatus, s.DeletePodAfterAppFinish),
		Issues:    issues,
		templates: templates,
		selector:  parsed,
	}
}

// TemplateName returns the template name of an id.
func (p *Pass) TemplateName(id int) string {
	return p.App.Spec.TemplateNameOf(tkestackv1.FormatInstanceID(id))
}

// Template returns the resolved template of an id; false when its name resolves to nothing.
func (p *Pass) Template(id int) (*Template, bool) {
	t, ok := p.templates[p.TemplateName(id)]
	return t, ok
}

// TemplateByName returns a resolved template by name ("default" is spec.template).
func (p *Pass) TemplateByName(name string) (*Template, bool) {
	t, ok := p.templates[name]
	return t, ok
}

// Selector returns the parsed effective selector (for adoption and release); nil when the spec is blocked.
func (p *Pass) Selector() labels.Selector {
	return p.selector
}

// Missing returns the desired-running ids without a pod, ascending: the reconciler checks their names for
// pods of other owners (Observation.NameTaken) before planning.
func (p *Pass) Missing(pods Pods) []int {
	var out []int
	for id := 0; id < p.Desired.Replicas; id++ {
		if _, ok := pods[id]; !ok && p.Desired.Class(id) == ClassRunning {
			out = append(out, id)
		}
	}
	return out
}

// DesiredPod constructs the pod of an id from its resolved template; false when unresolvable.
func (p *Pass) DesiredPod(id int) (*corev1.Pod, bool) {
	tpl, ok := p.Template(id)
	if !ok {
		return nil, false
	}
	return NewPod(p.App, id, tpl), true
}
