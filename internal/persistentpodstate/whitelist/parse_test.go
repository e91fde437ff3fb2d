package whitelist

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParse(t *testing.T) {
	tests := map[string]struct {
		value   string
		want    []Entry
		wantErr bool
	}{
		"blank":            {value: ""},
		"only spaces":      {value: " \n\t "},
		"JSON null":        {value: "null"},
		"no workloads key": {value: `{"other": 1}`},
		"workloads null":   {value: `{"workloads": null}`},
		"capitalized keys": {
			value: `{"workloads":[{"Group":"example.com","Version":"v1","Kind":"Foo"}]}`,
			want:  []Entry{foo},
		},
		"lower-case keys": {
			value: `{"workloads":[{"group":"example.com","version":"v1","kind":"Foo"}]}`,
			want:  []Entry{foo},
		},
		"upper-case and mixed keys": {
			value: `{"WORKLOADS":[{"GROUP":"example.com","vErSiOn":"v1","KIND":"Bar","ReplicasPath":"spec.size"}]}`,
			want:  []Entry{bar},
		},
		"replicasPath kept": {
			value: `{"workloads":[{"Group":"example.com","Version":"v1","Kind":"Bar","replicasPath":"spec.size"}]}`,
			want:  []Entry{bar},
		},
		"values trimmed": {
			value: `{"workloads":[{"Group":" example.com ","Version":"\tv1","Kind":"Bar ","replicasPath":" spec.size"}]}`,
			want:  []Entry{bar},
		},
		"unknown fields ignored": {
			value: `{"extra":true,"workloads":[{"Group":"example.com","Version":"v1","Kind":"Foo","Resource":"foos"}]}`,
			want:  []Entry{foo},
		},
		"empty version kept empty": {
			value: `{"workloads":[{"Group":"other.io","Kind":"Baz"}]}`,
			want:  []Entry{baz},
		},
		"empty kind dropped": {
			value: `{"workloads":[{"Group":"example.com","Version":"v1","Kind":"  "},{"Group":"other.io","Kind":"Baz"},null]}`,
			want:  []Entry{baz},
		},
		"built-in kinds dropped": {
			value: `{"workloads":[{"Group":"apps","Version":"v1","Kind":"StatefulSet"},` +
				`{"Group":"apps.kruise.io","Version":"v1beta1","Kind":"StatefulSet"},` +
				`{"Group":"apps.tkestack.io","Version":"v1","Kind":"TApp"},` +
				`{"Group":"example.com","Version":"v1","Kind":"Foo"}]}`,
			want: []Entry{foo},
		},
		"built-in match is case-sensitive": {
			value: `{"workloads":[{"Group":"apps","Kind":"statefulset"}]}`,
			want:  []Entry{{Group: "apps", Kind: "statefulset"}},
		},
		"duplicates keep the first": {
			value: `{"workloads":[{"Group":"example.com","Version":"v1","Kind":"Foo"},` +
				`{"Group":"other.io","Kind":"Baz"},` +
				`{"Group":"example.com","Version":"v2","Kind":"Foo","replicasPath":"spec.n"}]}`,
			want: []Entry{foo, baz},
		},
		"order kept": {
			value: `{"workloads":[{"Group":"other.io","Kind":"Baz"},{"Group":"example.com","Version":"v1","Kind":"Foo"}]}`,
			want:  []Entry{baz, foo},
		},
		"malformed JSON":       {value: `{"workloads":[`, wantErr: true},
		"trailing garbage":     {value: `{"workloads":[]} x`, wantErr: true},
		"workloads not a list": {value: `{"workloads":{"Kind":"Foo"}}`, wantErr: true},
		"entry not an object":  {value: `{"workloads":["Foo"]}`, wantErr: true},
		"kind not a string":    {value: `{"workloads":[{"Kind":7}]}`, wantErr: true},
		"top level not object": {value: `[{"Kind":"Foo"}]`, wantErr: true},
		"yaml instead of JSON": {value: "workloads:\n- kind: Foo\n", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.value)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse error = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				if got != nil {
					t.Errorf("Parse returned a snapshot with its error: %v", got.Entries())
				}
				return
			}
			if got == nil {
				t.Fatal("Parse returned a nil snapshot")
			}
			if diff := cmp.Diff(tc.want, got.Entries()); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			for _, e := range tc.want {
				if !got.Allowed(e.GroupKind()) {
					t.Errorf("%v not allowed", e.GroupKind())
				}
			}
		})
	}
}

func TestParseReportsDroppedEntries(t *testing.T) {
	_, dropped, err := parse(`{"workloads":[{"Kind":""},{"Group":"apps","Kind":"StatefulSet"},` +
		`{"Group":"other.io","Kind":"Baz"},{"Group":"other.io","Kind":"Baz"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`workloads[0] (group "", version "", kind ""): no kind`,
		`workloads[1] (group "apps", version "", kind "StatefulSet"): a built-in kind, supported without whitelisting`,
		`workloads[3] (group "other.io", version "", kind "Baz"): duplicate group and kind, the first entry wins`,
	}
	if diff := cmp.Diff(want, dropped); diff != "" {
		t.Errorf("dropped (-want +got):\n%s", diff)
	}
}

func TestParseConfigMap(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "drover-system", Name: DefaultConfigMapName}
	tests := map[string]struct {
		cm      *corev1.ConfigMap
		want    []Entry
		wantErr bool
	}{
		"missing ConfigMap": {cm: nil},
		"no data":           {cm: &corev1.ConfigMap{ObjectMeta: meta}},
		"missing key": {cm: &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{
			"other": `{"workloads":[{"Group":"example.com","Version":"v1","Kind":"Foo"}]}`,
		}}},
		"blank value": {cm: &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{DataKey: "  "}}},
		"value": {
			cm: &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{
				DataKey: `{"workloads":[{"Group":"example.com","Version":"v1","Kind":"Foo"}]}`,
			}},
			want: []Entry{foo},
		},
		"invalid value": {
			cm:      &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{DataKey: "{"}},
			wantErr: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseConfigMap(tc.cm)
			if (err != nil) != tc.wantErr {
				t.Fatalf("ParseConfigMap error = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if got == nil {
				t.Fatal("ParseConfigMap returned a nil snapshot")
			}
			if diff := cmp.Diff(tc.want, got.Entries()); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
		})
	}
}
