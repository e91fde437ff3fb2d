package e2e

// The admission fuzz's loop: which request comes next, and the nudges of the error-loop check.

import (
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/localcluster"
)

// liveObj is an object the fuzz created and the API server admitted.
type liveObj struct {
	ns, name string
	stored   jsonObj // as last returned by the API server
}

// fuzzRun is one run of the fuzz.
type fuzzRun struct {
	cfg        fuzzConfig
	g          *fuzzGen
	c          *fuzzClient
	kinds      []*fuzzKind
	namespaces []string
	live       map[*fuzzKind][]*liveObj
	figures    *fuzzFigures
	// history holds, by "Kind namespace/name", the admitted requests that wrote each object.
	history map[string][]string
}

// newFuzzRun prepares a run: three namespaces, the target pool of the seed YurtAppDaemons, the KubeStellar
// fixture of the seed StagedBindingPolicies, the PersistentPodStates that claim fuzzClaimedTarget, the kinds
// and their seeds. Everything it and the run create goes at the end of the spec.
func newFuzzRun(cfg fuzzConfig) *fuzzRun {
	root, err := localcluster.FindRepoRoot("")
	Expect(err).NotTo(HaveOccurred())
	kinds, err := fuzzKinds(root)
	Expect(err).NotTo(HaveOccurred())
	c, err := newFuzzClient(cluster.Config, cfg.rate)
	Expect(err).NotTo(HaveOccurred())
	r := &fuzzRun{
		cfg: cfg, g: newFuzzGen(cfg.seed), c: c, kinds: kinds,
		live: map[*fuzzKind][]*liveObj{}, figures: newFuzzFigures(cfg.seed), history: map[string][]string{},
	}
	for range 3 {
		r.namespaces = append(r.namespaces, newNamespace("fuzz"))
	}
	target := &openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: fuzzTargetPool, Labels: map[string]string{fuzzTargetLabel: "true"}}}
	Expect(k8sClient.Create(suiteCtx, target)).To(Succeed())
	setupSBPFixture(r.namespaces[0])
	claimTarget(r.namespaces)
	DeferCleanup(func() {
		r.cleanup()
		Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, target))).To(Succeed())
	})
	return r
}

// sendAll sends the configured number of requests, or as many as the request budget allows.
func (r *fuzzRun) sendAll() {
	deadline := time.Now().Add(r.cfg.requestBudget)
	for i := 0; i < r.cfg.requests && time.Now().Before(deadline); i++ {
		k := pick(r.g, r.kinds)
		if live := r.live[k]; len(live) > 0 && r.g.chance(r.cfg.updateShare) {
			r.update(k, pick(r.g, live))
		} else {
			r.create(k, i)
		}
	}
}

// create sends a seed of k, mutated unless it is one of the valid share.
func (r *fuzzRun) create(k *fuzzKind, i int) {
	si := r.g.intn(len(k.seeds))
	o, _ := cloneJSON(k.seeds[si]).(jsonObj)
	meta := ensureObj(o, "metadata")
	meta["name"] = fmt.Sprintf("fz-%s-%d", k.abbr, i)
	ns := ""
	if k.namespaced {
		ns = pick(r.g, r.namespaces)
		meta["namespace"] = ns
	}
	if k.prepare != nil {
		k.prepare(o)
	}
	q := &fuzzRequest{Op: "CREATE", Kind: k.kind, Seed: si}
	if !r.g.chance(r.cfg.validShare) {
		q.Changes = r.mutate(k, o)
	}
	name, _ := getPath(o, jsonPath{"metadata", "name"})
	q.Name, _ = name.(string)
	resp := r.c.do(suiteCtx, http.MethodPost, k.path(ns, ""), encodeBody(o))
	q.record(resp)
	r.figures.add(q, resp)
	if resp.code/100 == 2 {
		stored, err := decodeJSON(resp.body)
		Expect(err).NotTo(HaveOccurred())
		r.live[k] = append(r.live[k], &liveObj{ns: ns, name: q.Name, stored: stored})
		r.remember(k, ns, q)
	}
}

// update reads an admitted object, changes it (a valid edit or mutations) and writes it back.
func (r *fuzzRun) update(k *fuzzKind, obj *liveObj) {
	got := r.c.do(suiteCtx, http.MethodGet, k.path(obj.ns, obj.name), nil)
	r.figures.Gets++
	q := &fuzzRequest{Op: "UPDATE", Kind: k.kind, Name: obj.name}
	if got.code != http.StatusOK {
		q.record(got)
		r.figures.fail("reading an admitted object failed", q)
		return
	}
	o, err := decodeJSON(got.body)
	Expect(err).NotTo(HaveOccurred())
	if r.g.chance(0.3) {
		edit := pick(r.g, k.validEdits)
		if c, ok := edit.apply(r.g, o); ok {
			c.Mutation = edit.name
			q.Changes = []change{c}
		}
	} else {
		q.Changes = r.mutate(k, o)
	}
	resp := r.c.do(suiteCtx, http.MethodPut, k.path(obj.ns, obj.name), encodeBody(o))
	q.record(resp)
	r.figures.add(q, resp)
	if resp.code/100 == 2 {
		stored, err := decodeJSON(resp.body)
		Expect(err).NotTo(HaveOccurred())
		obj.stored = stored
		r.remember(k, obj.ns, q)
	}
}

// remember records an admitted request in the history of its object.
func (r *fuzzRun) remember(k *fuzzKind, ns string, q *fuzzRequest) {
	key := k.kind + " " + ns + "/" + q.Name
	r.history[key] = append(r.history[key], q.String())
}

// explainErrors records the objects the controllers failed on during the error-loop rounds, each with the
// admitted requests that wrote it.
func (r *fuzzRun) explainErrors(objs []erroringObject) {
	rf := &r.figures.ReconcileErrors
	rf.erroring = objs
	for _, e := range objs {
		rf.Objects = append(rf.Objects, r.describeErroring(e))
	}
}

// mutate applies one to three mutations to o: generic ones and ones that know k's fields, half and half.
func (r *fuzzRun) mutate(k *fuzzKind, o jsonObj) []change {
	n := 1
	if r.g.chance(0.3) {
		n++
	}
	if r.g.chance(0.1) {
		n++
	}
	var changes []change
	for tries := 0; len(changes) < n && tries < 10; tries++ {
		from := genericMutations
		if r.g.chance(0.5) {
			from = k.mutations
		}
		m := pick(r.g, from)
		if c, ok := m.apply(r.g, o); ok {
			c.Mutation = m.name
			changes = append(changes, c)
		}
	}
	return changes
}

// nudgeAll patches every admitted object with its kind's nudge, and returns how many nudges of each kind were
// admitted.
func (r *fuzzRun) nudgeAll(round int) map[*fuzzKind]int {
	admitted := map[*fuzzKind]int{}
	for _, k := range r.kinds {
		for _, obj := range r.live[k] {
			patch := k.nudge(obj.stored, round)
			if patch == nil {
				continue
			}
			q := &fuzzRequest{Op: "NUDGE", Kind: k.kind, Name: obj.name,
				Changes: []change{{Mutation: "nudge", Desc: short(patch)}}}
			resp := r.c.do(suiteCtx, http.MethodPatch, k.path(obj.ns, obj.name), encodeBody(patch))
			q.record(resp)
			r.figures.addNudge(q, resp)
			if resp.code/100 == 2 {
				admitted[k]++
				if stored, err := decodeJSON(resp.body); err == nil {
					obj.stored = stored
				}
			}
		}
	}
	GinkgoWriter.Printf("admission fuzz: nudge round %d sent\n", round)
	return admitted
}

// cleanup deletes the cluster-scoped objects the fuzz created (the namespaced ones go with their
// namespaces).
func (r *fuzzRun) cleanup() {
	for _, k := range r.kinds {
		if k.namespaced {
			continue
		}
		for _, o := range r.live[k] {
			resp := r.c.do(suiteCtx, http.MethodDelete, k.path("", o.name), nil)
			Expect(resp.err).NotTo(HaveOccurred(), "deleting %s %s", k.kind, o.name)
			Expect(resp.code/100 == 2 || resp.code == http.StatusNotFound).To(BeTrue(),
				"deleting %s %s: %d %s", k.kind, o.name, resp.code, resp.body)
		}
	}
}
