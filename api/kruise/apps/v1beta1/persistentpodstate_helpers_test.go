package v1beta1_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	kruisev1beta1 "github.com/drover-dev/drover/api/kruise/apps/v1beta1"
)

func TestParseCommaList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,, ", nil},
		{"topology.kubernetes.io/zone", []string{"topology.kubernetes.io/zone"}},
		{"a,b", []string{"a", "b"}},
		{" a , b ", []string{"a", "b"}},
		{"a,,b,", []string{"a", "b"}},
		{"b,a,b,a", []string{"b", "a"}},
		{"a, a ,\ta", []string{"a"}},
		{"kubernetes.io/hostname, topology.kubernetes.io/zone", []string{"kubernetes.io/hostname", "topology.kubernetes.io/zone"}},
		{"a b,c", []string{"a b", "c"}}, // inner spaces are kept: the key check rejects them later
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, kruisev1beta1.ParseCommaList(tt.in)); diff != "" {
			t.Errorf("ParseCommaList(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// FuzzParseCommaList checks the properties of the parsed list on any input: no empty, untrimmed, comma-holding
// or repeated item; every item occurs in the input; and parsing the joined result gives it back.
func FuzzParseCommaList(f *testing.F) {
	for _, s := range []string{"", "a", " a , b ", "a,,a", ",", "x,y,x,z", "\u00a0a\u00a0,b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := kruisev1beta1.ParseCommaList(s)
		if got != nil && len(got) == 0 {
			t.Fatalf("ParseCommaList(%q) returned an empty non-nil list", s)
		}
		for i, item := range got {
			if item == "" || item != strings.TrimSpace(item) || strings.Contains(item, ",") {
				t.Fatalf("ParseCommaList(%q)[%d] = %q: empty, untrimmed or holding a comma", s, i, item)
			}
			if slices.Index(got, item) != i {
				t.Fatalf("ParseCommaList(%q) repeats %q", s, item)
			}
			if !strings.Contains(s, item) {
				t.Fatalf("ParseCommaList(%q) invented %q", s, item)
			}
		}
		if again := kruisev1beta1.ParseCommaList(strings.Join(got, ",")); !slices.Equal(again, got) {
			t.Fatalf("ParseCommaList(%q) = %q, but parsing it joined gives %q", s, got, again)
		}
	})
}
