package e2e

import (
	"bytes"
	"testing"

	"github.com/drover-dev/drover/internal/localcluster"
)

// The admission fuzz's generator, without a cluster: `go test ./test/e2e -run TestAdmissionFuzzGenerator`.

func loadFuzzKinds(t *testing.T) []*fuzzKind {
	t.Helper()
	root, err := localcluster.FindRepoRoot("")
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := fuzzKinds(root)
	if err != nil {
		t.Fatal(err)
	}
	return kinds
}

// A seed gives the same requests every time: the runs it prints can be reproduced.
func TestAdmissionFuzzGeneratorIsDeterministic(t *testing.T) {
	kinds := loadFuzzKinds(t)
	bodies := func(seed uint64) [][]byte {
		r := &fuzzRun{g: newFuzzGen(seed), kinds: kinds}
		var out [][]byte
		for range 300 {
			k := pick(r.g, r.kinds)
			o, _ := cloneJSON(pick(r.g, k.seeds)).(jsonObj)
			r.mutate(k, o)
			out = append(out, encodeBody(o))
		}
		return out
	}
	a, b, c := bodies(7), bodies(7), bodies(8)
	same := 0
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("request %d differs between two runs of seed 7:\n%s\n%s", i, a[i], b[i])
		}
		if bytes.Equal(a[i], c[i]) {
			same++
		}
	}
	if same == len(a) {
		t.Error("seeds 7 and 8 gave the same requests")
	}
}

// Every mutation applies to some seed of its kind, so none is dead, and the seeds are what the kind serves.
func TestAdmissionFuzzGeneratorMutationsApply(t *testing.T) {
	g := newFuzzGen(1)
	for _, k := range loadFuzzKinds(t) {
		if len(k.seeds) == 0 {
			t.Fatalf("%s has no seed", k.kind)
		}
		for i, s := range k.seeds {
			if s["kind"] != k.kind || s["apiVersion"] != k.groupVersion {
				t.Errorf("%s seed %d is a %v %v", k.kind, i, s["apiVersion"], s["kind"])
			}
		}
		all := append(append(append([]mutation(nil), genericMutations...), k.mutations...), k.validEdits...)
		for _, m := range all {
			applied := false
			for _, s := range k.seeds {
				o, _ := cloneJSON(s).(jsonObj)
				if c, ok := m.apply(g, o); ok && c.Desc != "" {
					applied = true
					encodeBody(o)
				}
			}
			if !applied {
				t.Errorf("%s: mutation %s applies to no seed", k.kind, m.name)
			}
		}
	}
}

func TestJSONPathString(t *testing.T) {
	p := jsonPath{"spec", "labels", "fuzz.drover.dev/x~y", 3}
	if got, want := p.String(), "/spec/labels/fuzz.drover.dev~1x~0y/3"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A change that made the object invalid counts only when no later change touched the same node.
func TestFuzzRequestInvalid(t *testing.T) {
	bad := change{Mutation: "bad-taint-time", Path: "/spec/taints/0/timeAdded", Invalid: true}
	cases := map[string]struct {
		changes []change
		want    bool
	}{
		"alone":                   {[]change{bad}, true},
		"then elsewhere":          {[]change{bad, {Path: "/spec/labels"}}, true},
		"then its parent deleted": {[]change{bad, {Path: "/spec/taints"}}, false},
		"then itself replaced":    {[]change{bad, {Path: "/spec/taints/0/timeAdded"}}, false},
		"after its parent":        {[]change{{Path: "/spec/taints"}, bad}, true},
		"valid changes only":      {[]change{{Path: "/spec"}}, false},
	}
	for name, tc := range cases {
		q := &fuzzRequest{Changes: tc.changes}
		if got := q.invalid(); got != tc.want {
			t.Errorf("%s: invalid() = %v, want %v", name, got, tc.want)
		}
	}
}
