package sbpcel

import (
	"strconv"
	"syscall"
	"testing"
	"time"
)

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestZZCPU(t *testing.T) {
	cs := bigSelectCS(1000, bigUID(0), "1")
	measure := func(name string, n int, f func(i int)) {
		f(-1)
		start, wall := cpuNow(), time.Now()
		for i := range n {
			f(i)
		}
		t.Logf("%-28s cpu %12v/op  wall %12v/op", name, (cpuNow()-start)/time.Duration(n), time.Since(wall)/time.Duration(n))
	}
	for _, bc := range benchConditions {
		memo, _ := NewCache(Options{}).Compile(Condition, bc.expr)
		plain, _ := NewCache(Options{noMemo: true}).Compile(Condition, bc.expr)
		n := 2000
		if bc.name == "results" {
			n = 40
		}
		measure(bc.name+"/cold", n, func(i int) {
			memo.Eval(Input{CombinedStatus: &CSInput{UID: bigUID(i + 10), ResourceVersion: strconv.Itoa(i), Object: cs.Object}})
		})
		measure(bc.name+"/evaluated", n, func(int) { plain.Eval(Input{CombinedStatus: cs}) })
		measure(bc.name+"/warm", 20000, func(int) { memo.Eval(Input{CombinedStatus: cs}) })
	}
	measure("buildResults", 200, func(int) { buildResults(cs.Object) })
}
