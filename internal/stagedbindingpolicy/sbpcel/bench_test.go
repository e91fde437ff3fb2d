package sbpcel

import (
	"strconv"
	"testing"
)

// benchResultsCondition reads every row of the select collector through the results variable.
const benchResultsCondition = `results['deployment-status'].all(r, r.availableReplicas >= 1.0 && r.ready)`

var benchConditions = []struct {
	name, expr string
	want       bool
}{
	// The README condition skips the 1,000-row select collector by name and scans the aggregation's row.
	{"readme", readmeCondition, false},
	{"results", benchResultsCondition, true},
}

// BenchmarkCondition evaluates one condition over a CombinedStatus with 1,000 select rows.
//   - cold: a new UID and resourceVersion each time: derived values are rebuilt, nothing is remembered;
//   - evaluated: the same object, derived values cached, the program runs each time;
//   - warm: the same object, the remembered outcome is returned.
func BenchmarkCondition(b *testing.B) {
	cs := bigSelectCS(1000, bigUID(0), "1")
	for _, bc := range benchConditions {
		prg := benchProgram(b, bc.expr, false)
		b.Run(bc.name+"/cold", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				in := &CSInput{UID: bigUID(i + 1), ResourceVersion: strconv.Itoa(i), Object: cs.Object}
				benchEval(b, prg, in, bc.want)
			}
		})
		evaluated := benchProgram(b, bc.expr, true)
		benchEval(b, evaluated, cs, bc.want)
		benchEval(b, prg, cs, bc.want)
		b.Run(bc.name+"/evaluated", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchEval(b, evaluated, cs, bc.want)
			}
		})
		b.Run(bc.name+"/warm", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				benchEval(b, prg, cs, bc.want)
			}
		})
	}
}

// BenchmarkPass evaluates a condition over 300 unchanged CombinedStatuses (distinct UIDs) of 1,000
// select rows each, as one reconcile pass over a large rollout does; one op is the whole pass.
func BenchmarkPass(b *testing.B) {
	shared := bigSelectCS(1000, bigUID(0), "1").Object
	inputs := make([]*CSInput, 300)
	for i := range inputs {
		inputs[i] = &CSInput{UID: bigUID(i), ResourceVersion: "1", Object: shared}
	}
	for _, bc := range benchConditions {
		for _, mode := range []string{"evaluated", "warm"} {
			prg := benchProgram(b, bc.expr, mode == "evaluated")
			for _, in := range inputs { // derived values built, outcomes remembered
				benchEval(b, prg, in, bc.want)
			}
			b.Run(bc.name+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for _, in := range inputs {
						benchEval(b, prg, in, bc.want)
					}
				}
			})
		}
	}
}

// BenchmarkBuildResults measures building the results variable of 1,000 select rows.
func BenchmarkBuildResults(b *testing.B) {
	obj := bigSelectCS(1000, bigUID(0), "1").Object
	b.ReportAllocs()
	for b.Loop() {
		if _, err := buildResults(obj); err != nil {
			b.Fatal(err)
		}
	}
}

func benchProgram(b *testing.B, expr string, noMemo bool) *Program {
	b.Helper()
	prg, err := NewCache(Options{noMemo: noMemo}).Compile(Condition, expr)
	if err != nil {
		b.Fatal(err)
	}
	return prg
}

func benchEval(b *testing.B, prg *Program, cs *CSInput, want bool) {
	if got, err := prg.Eval(Input{CombinedStatus: cs}); err != nil || got != want {
		b.Fatalf("Eval() = %v, %v; want %v", got, err, want)
	}
}
