package core

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOrdinalOf(t *testing.T) {
	type want struct {
		Ordinal int
		OK      bool
	}
	cases := map[string]struct {
		name string
		want want
	}{
		"plain":                {"web-3", want{3, true}},
		"zero":                 {"web-0", want{0, true}},
		"several dashes":       {"my-web-app-12", want{12, true}},
		"leading zeros":        {"web-007", want{7, true}},
		"no dash":              {"web", want{}},
		"empty suffix":         {"web-", want{}},
		"non-digit suffix":     {"web-x1", want{}},
		"digit then letter":    {"web-1a", want{}},
		"dash only":            {"-", want{}},
		"only the suffix":      {"-5", want{5, true}},
		"sign":                 {"web-+1", want{}},
		"negative looks like":  {"web--1", want{1, true}}, // the text after the last '-' is "1"
		"space":                {"web- 1", want{}},
		"max int":              {"web-9223372036854775807", want{math.MaxInt, true}},
		"overflow":             {"web-9223372036854775808", want{}},
		"huge":                 {"web-" + strings.Repeat("9", 40), want{}},
		"unicode digit":        {"web-١", want{}},
		"dash in middle only":  {"a-b", want{}},
		"empty":                {"", want{}},
		"last dash wins":       {"web-1-x", want{}},
		"digits before suffix": {"web-1-2", want{2, true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, ok := OrdinalOf(tc.name)
			if diff := cmp.Diff(tc.want, want{o, ok}); diff != "" {
				t.Errorf("OrdinalOf(%q) (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}

// members returns the ordinals of [0, upTo) that o contains.
func members(o Ordinals, upTo int) []int {
	var out []int
	for i := -3; i < upTo; i++ {
		if o.Contains(i) {
			out = append(out, i)
		}
	}
	return out
}

func TestNewOrdinals(t *testing.T) {
	cases := map[string]struct {
		replicas, start int32
		reserved        []int
		want            []int
	}{
		"from zero":                  {replicas: 3, want: []int{0, 1, 2}},
		"start offset":               {replicas: 3, start: 5, want: []int{5, 6, 7}},
		"replicas zero":              {replicas: 0, start: 2, reserved: []int{3}, want: nil},
		"replicas negative":          {replicas: -2, want: nil},
		"negative start counts as 0": {replicas: 2, start: -4, want: []int{0, 1}},
		"reserved skipped":           {replicas: 4, start: 2, reserved: []int{3, 6, 7}, want: []int{2, 4, 5, 8}},
		"reserved below start":       {replicas: 2, start: 5, reserved: []int{0, 1, 4}, want: []int{5, 6}},
		"reserved far above":         {replicas: 2, reserved: []int{50}, want: []int{0, 1}},
		"duplicate reserved":         {replicas: 2, reserved: []int{0, 0, 0}, want: []int{1, 2}},
		"reserved first ordinals":    {replicas: 2, reserved: []int{0, 1, 2}, want: []int{3, 4}},
		"negative reserved ignored":  {replicas: 2, reserved: []int{-1}, want: []int{0, 1}},
		"one replica":                {replicas: 1, start: 9, want: []int{9}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := members(NewOrdinals(tc.replicas, tc.start, tc.reserved), 60)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("valid ordinals (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNewOrdinalsKeepsOnlyCrossedReservations: reservations beyond the valid range cost no memory, and a
// range walk stops after replicas valid ordinals.
func TestNewOrdinalsKeepsOnlyCrossedReservations(t *testing.T) {
	reserved := []int{1, 1_000, 2_000}
	o := NewOrdinals(3, 0, reserved)
	if diff := cmp.Diff(map[int]struct{}{1: {}}, o.reserved); diff != "" {
		t.Errorf("reserved kept (-want +got):\n%s", diff)
	}
	if o.end != 4 {
		t.Errorf("end = %d, want 4", o.end)
	}
	if plain := NewOrdinals(5, 0, nil); plain.reserved != nil {
		t.Errorf("no reservation built a set: %v", plain.reserved)
	}
}

func TestParseReserveOrdinals(t *testing.T) {
	cases := map[string]struct {
		items   []any
		want    []int
		wantErr string
	}{
		"nil":                 {items: nil, want: nil},
		"int64":               {items: []any{int64(3), int64(7)}, want: []int{3, 7}},
		"int and int32":       {items: []any{4, int32(5)}, want: []int{4, 5}},
		"whole float":         {items: []any{float64(2)}, want: []int{2}},
		"range":               {items: []any{"2-4"}, want: []int{2, 3, 4}},
		"range spaces":        {items: []any{" 6 - 7 "}, want: []int{6, 7}},
		"single-value range":  {items: []any{"5-5"}, want: []int{5}},
		"mixed":               {items: []any{int64(1), "3-4", float64(9)}, want: []int{1, 3, 4, 9}},
		"fraction voids":      {items: []any{int64(1), 2.5}, wantErr: "reserveOrdinals[1]"},
		"negative voids":      {items: []any{int64(1), int64(-1)}, wantErr: "reserveOrdinals[1]: ordinal -1"},
		"numeric string":      {items: []any{"3"}, wantErr: `"3" is not an "a-b" range`},
		"reversed range":      {items: []any{int64(0), "5-2"}, wantErr: "starts after its end"},
		"bad range":           {items: []any{"a-b"}, wantErr: "reserveOrdinals[0]"},
		"open range":          {items: []any{"3-"}, wantErr: "reserveOrdinals[0]"},
		"negative range":      {items: []any{"-1-3"}, wantErr: "reserveOrdinals[0]"},
		"three parts":         {items: []any{"1-2-3"}, wantErr: "reserveOrdinals[0]"},
		"wrong type":          {items: []any{true}, wantErr: "bool"},
		"nil item":            {items: []any{nil}, wantErr: "reserveOrdinals[0]"},
		"map item":            {items: []any{map[string]any{"a": 1}}, wantErr: "reserveOrdinals[0]"},
		"first bad is named":  {items: []any{"x", true}, wantErr: "reserveOrdinals[0]"},
		"NaN":                 {items: []any{math.NaN()}, wantErr: "reserveOrdinals[0]"},
		"huge float":          {items: []any{1e300}, wantErr: "reserveOrdinals[0]"},
		"beyond int32":        {items: []any{int64(math.MaxInt32) + 1}, wantErr: "out of range"},
		"range beyond int32":  {items: []any{"2147483647-2147483648"}, wantErr: "out of range"},
		"range too large":     {items: []any{"0-999999999"}, wantErr: "more than"},
		"ranges add up":       {items: []any{"0-600000", "700000-1300000"}, wantErr: "reserveOrdinals[1]: more than"},
		"max range overflows": {items: []any{"9223372036854775807-9223372036854775807"}, wantErr: "out of range"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseReserveOrdinals(tc.items)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if got != nil {
					t.Errorf("an invalid item must void the whole set, got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("reserved (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReservationsEndToEnd: the set an Advanced StatefulSet's reserveOrdinals produces.
func TestReservationsEndToEnd(t *testing.T) {
	reserved, err := ParseReserveOrdinals([]any{int64(3), "6 - 7"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{2, 4, 5, 8}, members(NewOrdinals(4, 2, reserved), 20)); diff != "" {
		t.Errorf("valid ordinals (-want +got):\n%s", diff)
	}
	voided, err := ParseReserveOrdinals([]any{int64(3), "7-6"})
	if err == nil {
		t.Fatal("want an error for a reversed range")
	}
	if diff := cmp.Diff([]int{2, 3, 4, 5}, members(NewOrdinals(4, 2, voided), 20)); diff != "" {
		t.Errorf("a voided set reserves nothing (-want +got):\n%s", diff)
	}
}

func TestReplicasAt(t *testing.T) {
	type want struct {
		Replicas int32
		OK       bool
	}
	obj := func(spec any) map[string]any { return map[string]any{"spec": spec} }
	cases := map[string]struct {
		obj  map[string]any
		path string
		want want
	}{
		"int64":              {obj(map[string]any{"replicas": int64(3)}), "spec.replicas", want{3, true}},
		"int":                {obj(map[string]any{"replicas": 4}), "spec.replicas", want{4, true}},
		"whole float":        {obj(map[string]any{"replicas": float64(5)}), "spec.replicas", want{5, true}},
		"zero":               {obj(map[string]any{"replicas": int64(0)}), "spec.replicas", want{0, true}},
		"custom path":        {obj(map[string]any{"size": int64(7)}), "spec.size", want{7, true}},
		"deep path":          {obj(map[string]any{"a": map[string]any{"b": int64(2)}}), "spec.a.b", want{2, true}},
		"fraction":           {obj(map[string]any{"replicas": 2.5}), "spec.replicas", want{}},
		"negative":           {obj(map[string]any{"replicas": int64(-1)}), "spec.replicas", want{}},
		"beyond int32":       {obj(map[string]any{"replicas": int64(math.MaxInt32) + 1}), "spec.replicas", want{}},
		"string":             {obj(map[string]any{"replicas": "3"}), "spec.replicas", want{}},
		"nil value":          {obj(map[string]any{"replicas": nil}), "spec.replicas", want{}},
		"spec empty":         {obj(map[string]any{}), "spec.replicas", want{}},
		"no spec":            {map[string]any{"metadata": map[string]any{}}, "spec.replicas", want{}},
		"spec not a map":     {obj("x"), "spec.replicas", want{}},
		"spec a list":        {obj([]any{int64(1)}), "spec.replicas", want{}},
		"field is a map":     {obj(map[string]any{"replicas": map[string]any{}}), "spec.replicas", want{}},
		"past a leaf":        {obj(map[string]any{"replicas": int64(3)}), "spec.replicas.x", want{}},
		"nil object":         {nil, "spec.replicas", want{}},
		"empty path":         {obj(map[string]any{"replicas": int64(3)}), "", want{}},
		"empty path element": {obj(map[string]any{"replicas": int64(3)}), "spec..replicas", want{}},
		"NaN":                {obj(map[string]any{"replicas": math.NaN()}), "spec.replicas", want{}},
		"infinity":           {obj(map[string]any{"replicas": math.Inf(1)}), "spec.replicas", want{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, ok := ReplicasAt(tc.obj, tc.path)
			if diff := cmp.Diff(tc.want, want{r, ok}); diff != "" {
				t.Errorf("ReplicasAt (-want +got):\n%s", diff)
			}
		})
	}
}
