package render

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
)

// FuzzRender feeds random specs and pools through Render, ValidateSpec and the helpers: none may panic,
// and a rendered body must be in sync with itself.
func FuzzRender(f *testing.F) {
	seeds := []struct{ spec, pool string }{
		{`{}`, `{}`},
		{`{"selector":{"matchLabels":{"app":"web"}},"nodepoolSelector":{},"workloadTemplate":{"deploymentTemplate":{"spec":{}}}}`, `{"Name":"hz"}`},
		{`{"workloadTemplate":{"deploymentTemplate":{"metadata":null,"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"Exists"}]},` +
			`"template":{"spec":{"affinity":{"podAntiAffinity":{}},"containers":[{"name":"c","image":"i"}]}}}}}}`,
			`{"Name":"p","Labels":{"a":"b"},"Taints":[{"key":"k","effect":"NoSchedule"},{"key":"k","effect":"NoSchedule"}]}`},
		{`{"selector":{"matchExpressions":[{"key":"app","operator":"In","values":["web"]}]},"workloadTemplate":{"statefulSetTemplate":{"spec":{"replicas":0,` +
			`"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"i"},{"name":"c","image":"j"}]}}}}},` +
			`"workloadTweaks":[{"pools":["p"],"tweaks":{"replicas":3,"containerImages":[{"name":"c","targetImage":"x"}],"patches":[` +
			`{"path":"/spec/serviceName","operation":"add","value":"svc-{{nodepool-name}}"},{"path":"/spec/selector","operation":"remove"},` +
			`{"path":"/metadata","operation":"replace","value":{}},{"path":"/spec/template/spec/containers/-1","operation":"remove"}]}},` +
			`{"nodepoolSelector":{"matchLabels":{"a":"b"}},"tweaks":{"patches":[{"path":"/spec/replicas","operation":"replace","value":"x"}]}}]}`,
			`{"Name":"p","Labels":{"a":"b"}}`},
		{`{"workloadTemplate":{"deploymentTemplate":{"spec":{}},"statefulSetTemplate":{"spec":{}}}}`, `{"Name":""}`},
		{`{"workloadTemplate":{"deploymentTemplate":{"spec":{}}},"workloadTweaks":[{"pools":["x"],"tweaks":{"patches":[` +
			`{"path":"","operation":"replace","value":[]},{"path":"/","operation":"add","value":null},{"path":"/spec/template/spec/volumes","operation":"add",` +
			`"value":[{"name":"v","emptyDir":{"sizeLimit":"1Gi"}}]}]}}]}`, `{"Name":"x"}`},
	}
	for _, s := range seeds {
		f.Add(s.spec, s.pool)
	}
	f.Fuzz(func(t *testing.T, specJSON, poolJSON string) {
		spec := &openyurtv1alpha1.YurtAppDaemonSpec{}
		var pool Pool
		if json.Unmarshal([]byte(specJSON), spec) != nil || json.Unmarshal([]byte(poolJSON), &pool) != nil {
			return
		}
		_ = ValidateSpec(spec, field.NewPath("spec"))
		_ = MatchingTweaks(spec, pool)
		_, _ = RevisionData(spec)
		_ = ChildName(spec.TemplateType(), "owner", pool.Name)
		for _, a := range Adapters() {
			_ = a.ImmutableChanges(&spec.WorkloadTemplate, &spec.WorkloadTemplate, field.NewPath("spec", "workloadTemplate"))
		}
		in := Input{
			Owner: OwnerRef{APIVersion: "apps.openyurt.io/v1alpha1", Kind: "YurtAppDaemon", Name: "owner", UID: "uid"},
			Spec:  spec, Pool: pool, Namespace: "ns", Revision: "owner-1", Name: "owner-" + pool.Name,
		}
		res, err := Render(in)
		if err != nil {
			return
		}
		if !InSync(res.Body, res.Body.DeepCopy(), "uid") {
			t.Errorf("a rendered body is not in sync with itself: %v", res.Body.Object)
		}
		again, err := Render(in)
		if err != nil || again.Hash != res.Hash {
			t.Errorf("render is not deterministic: %v", err)
		}
	})
}
