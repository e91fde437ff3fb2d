package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

func TestRevisionDataShape(t *testing.T) {
	data, err := RevisionData(deploySpec())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	tmpl := got["spec"]["workloadTemplate"]
	if tmpl["$patch"] != "replace" || tmpl["deploymentTemplate"] == nil || len(got) != 1 || len(got["spec"]) != 1 {
		t.Errorf("revision data %s", data)
	}
}

func TestRevisionDataCoversOnlyTheTemplate(t *testing.T) {
	base, err := RevisionData(deploySpec())
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		change func(*openyurtv1alpha1.YurtAppDaemonSpec)
		same   bool
	}{
		"unchanged": {change: func(*openyurtv1alpha1.YurtAppDaemonSpec) {}, same: true},
		"selector": {change: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
			s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}
		}, same: true},
		"nodepoolSelector": {change: func(s *openyurtv1alpha1.YurtAppDaemonSpec) { s.NodePoolSelector = nil }, same: true},
		"revisionHistoryLimit": {change: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
			s.RevisionHistoryLimit = ptr.To[int32](3)
		}, same: true},
		"tweaks": {change: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
			s.WorkloadTweaks = []openyurtv1alpha1.WorkloadTweak{{Pools: []string{"a"}}}
		}, same: true},
		"image": {change: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
			s.WorkloadTemplate.DeploymentTemplate.Spec.Template.Spec.Containers[0].Image = "nginx:2"
		}},
		"template label": {change: func(s *openyurtv1alpha1.YurtAppDaemonSpec) {
			s.WorkloadTemplate.DeploymentTemplate.Labels["new"] = "1"
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := deploySpec()
			tc.change(spec)
			data, err := RevisionData(spec)
			if err != nil {
				t.Fatal(err)
			}
			if same := bytes.Equal(data, base); same != tc.same {
				t.Errorf("data equal = %v, want %v", same, tc.same)
			}
			if h := RevisionHash(data, nil); (h == RevisionHash(base, nil)) != tc.same {
				t.Errorf("hash equal = %v, want %v", !tc.same, tc.same)
			}
		})
	}
	if _, err := RevisionData(nil); err == nil {
		t.Errorf("RevisionData(nil) did not fail")
	}
}

// k8sHash is Kubernetes' history.HashControllerRevision for raw data, for comparison.
func k8sHash(data []byte, probe *int32) string {
	hf := fnv.New32()
	hf.Write(data)
	if probe != nil {
		fmt.Fprint(hf, *probe)
	}
	return rand.SafeEncodeString(fmt.Sprint(hf.Sum32()))
}

func TestRevisionHash(t *testing.T) {
	data := []byte(`{"spec":{"workloadTemplate":{"$patch":"replace"}}}`)
	cases := map[string]*int32{"no collision count": nil, "zero": ptr.To[int32](0), "one": ptr.To[int32](1), "large": ptr.To[int32](1 << 30)}
	seen := map[string]string{}
	for name, cc := range cases {
		t.Run(name, func(t *testing.T) {
			got := RevisionHash(data, cc)
			if diff := cmp.Diff(k8sHash(data, cc), got); diff != "" {
				t.Errorf("hash differs from Kubernetes' (-want +got):\n%s", diff)
			}
			if got != RevisionHash(append([]byte(nil), data...), cc) {
				t.Errorf("not stable")
			}
			if len(got) == 0 || len(got) > 10 {
				t.Errorf("hash %q has length %d", got, len(got))
			}
		})
		h := RevisionHash(data, cc)
		if other, dup := seen[h]; dup {
			t.Errorf("collision counts %s and %s give the same hash %q", other, name, h)
		}
		seen[h] = name
	}
}

func TestRevisionHashProbing(t *testing.T) {
	data := []byte("x")
	seen := map[string]bool{RevisionHash(data, nil): true}
	for i := range int32(5) {
		h := RevisionHash(data, ptr.To(i))
		if seen[h] {
			t.Fatalf("collision count %d repeats hash %q", i, h)
		}
		seen[h] = true
	}
}

func TestRevisionName(t *testing.T) {
	cases := map[string]struct {
		owner, want string
	}{
		"short":                   {"web", "web-abc"},
		"52 characters kept":      {strings.Repeat("a", 52), strings.Repeat("a", 52) + "-abc"},
		"53 characters cut":       {strings.Repeat("a", 53), strings.Repeat("a", 52) + "-abc"},
		"trailing dash stripped":  {strings.Repeat("a", 51) + "-b", strings.Repeat("a", 51) + "-abc"},
		"trailing dot stripped":   {strings.Repeat("a", 50) + ".-b", strings.Repeat("a", 50) + "-abc"},
		"dots inside kept":        {"web.v1", "web.v1-abc"},
		"very long name is short": {strings.Repeat("o", 253), strings.Repeat("o", 52) + "-abc"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, RevisionName(tc.owner, "abc")); diff != "" {
				t.Errorf("RevisionName (-want +got):\n%s", diff)
			}
		})
	}
	if n := RevisionName(strings.Repeat("o", 253), RevisionHash([]byte("x"), ptr.To[int32](1<<30))); len(n) > 63 {
		t.Errorf("%q is longer than 63", n)
	}
}
