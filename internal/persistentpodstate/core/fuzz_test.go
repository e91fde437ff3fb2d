package core

import (
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/json"
)

// FuzzOrdinalOf: any name parses without panicking, and an ordinal, when found, is what the digits after
// the last '-' spell.
func FuzzOrdinalOf(f *testing.F) {
	for _, s := range []string{"web-0", "web-12", "web", "web-", "-", "", "a-b-3", "web-007", "web-99999999999999999999", "web-١"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		o, ok := OrdinalOf(name)
		if !ok {
			if o != 0 {
				t.Fatalf("no ordinal but %d", o)
			}
			return
		}
		suffix := name[strings.LastIndexByte(name, '-')+1:]
		if o < 0 || strings.TrimLeft(suffix, "0") != strings.TrimLeft(strconv.Itoa(o), "0") {
			t.Fatalf("OrdinalOf(%q) = %d", name, o)
		}
	})
}

// FuzzParseReserveOrdinals: any items parse without panicking; a valid set is non-negative and bounded, an
// invalid one is nil; the valid ordinals built from it count replicas and avoid every reserved ordinal.
func FuzzParseReserveOrdinals(f *testing.F) {
	f.Add("1-3", int64(5), 2.0, uint8(4), uint8(0))
	f.Add(" 2 - 2 ", int64(0), 7.0, uint8(10), uint8(3))
	f.Add("3", int64(-1), 1.5, uint8(0), uint8(0))
	f.Add("5-1", int64(1), 0.0, uint8(1), uint8(9))
	f.Add("0-999999999", int64(1<<40), 1e300, uint8(255), uint8(255))
	f.Fuzz(func(t *testing.T, rng string, n int64, fl float64, replicas, start uint8) {
		reserved, err := ParseReserveOrdinals([]any{rng, n, fl})
		if err != nil {
			if reserved != nil {
				t.Fatalf("an error must void the set, got %v", reserved)
			}
			reserved, _ = ParseReserveOrdinals([]any{n, fl})
		}
		if len(reserved) > MaxReservedOrdinals {
			t.Fatalf("%d reserved ordinals", len(reserved))
		}
		isReserved := map[int]bool{}
		for _, r := range reserved {
			if r < 0 {
				t.Fatalf("negative reserved ordinal %d", r)
			}
			isReserved[r] = true
		}
		o := NewOrdinals(int32(replicas), int32(start), reserved)
		count := 0
		for i := int(start) - 1; i <= int(start)+int(replicas)+len(isReserved); i++ {
			if o.Contains(i) {
				count++
				if isReserved[i] || i < int(start) {
					t.Fatalf("%d is valid although reserved or below start %d", i, start)
				}
			}
		}
		if count != int(replicas) {
			t.Fatalf("%d valid ordinals, want %d", count, replicas)
		}
	})
}

// FuzzReplicasAt: any decoded JSON object and path read without panicking, and a value found is
// non-negative.
func FuzzReplicasAt(f *testing.F) {
	f.Add(`{"spec":{"replicas":3}}`, "spec.replicas")
	f.Add(`{"spec":{"replicas":2.5}}`, "spec.replicas")
	f.Add(`{"spec":{"size":-1}}`, "spec.size")
	f.Add(`{"spec":"x"}`, "spec.replicas.x")
	f.Add(`{"spec":{"replicas":1e40}}`, "spec.replicas")
	f.Add(`{}`, "")
	f.Fuzz(func(t *testing.T, doc, path string) {
		var obj map[string]any
		if json.Unmarshal([]byte(doc), &obj) != nil {
			return
		}
		r, ok := ReplicasAt(obj, path)
		if r < 0 || (!ok && r != 0) {
			t.Fatalf("ReplicasAt = %d, %v", r, ok)
		}
	})
}
