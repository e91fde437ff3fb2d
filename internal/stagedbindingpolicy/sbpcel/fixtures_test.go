package sbpcel

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"testing"

	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// The fixtures are CombinedStatuses in KubeStellar's exact layout: top-level results, Number values as
// strings in "float", lists written as type Object, five labels. They are decoded the way an informer
// decodes them (integers int64, other numbers float64).

// The condition of the example in the KubeStellar workload stager's README, verbatim.
const readmeCondition = `combinedStatus.results.exists(r,
  r.name == 'deployments-aggregator' &&
  r.rows.exists(row,
    row.columns.exists(col,
      col.type == 'Number' &&
      col.float == '1'
)))
`

// The filter of the same example, verbatim.
const readmeFilter = `downsyncClause.resource == "deployments"`

const csMetaNginx = `
apiVersion: control.kubestellar.io/v1alpha1
kind: CombinedStatus
metadata:
  name: 8f3a51c2-7d1e-4b8e-9a51-0c6f2d9e4b11.2c9d0e7f-11aa-4c3b-8d2e-5f6a7b8c9d01
  namespace: nginx
  uid: 6b1e2f3a-4c5d-4e6f-8a9b-0c1d2e3f4a5b
  resourceVersion: "4711"
  generation: 3
  creationTimestamp: "2025-03-01T10:00:00Z"
  labels:
    status.kubestellar.io/api-group: apps
    status.kubestellar.io/resource: deployments
    status.kubestellar.io/namespace: nginx
    status.kubestellar.io/name: nginx-deployment
    status.kubestellar.io/binding-policy: nginx-staged-bindingpolicy.stage.dev
  ownerReferences:
  - apiVersion: apps/v1
    kind: Deployment
    name: nginx-deployment
    uid: 8f3a51c2-7d1e-4b8e-9a51-0c6f2d9e4b11
`

// csDevOne: one dev cluster reported one available replica. Holds a select collector with String,
// Number, Bool, Null and Object (map and list) values and an aggregation without groupBy.
const csDevOne = csMetaNginx + `
results:
- name: deployment-status
  columnNames: [cluster, availableReplicas, paused, conditions, spec, observedAt]
  rows:
  - columns:
    - {type: String, string: cluster-dev-1}
    - {type: Number, float: "1"}
    - {type: Bool, bool: false}
    - type: Object
      object:
      - {type: Available, status: "True", reason: MinimumReplicasAvailable}
      - {type: Progressing, status: "True", reason: NewReplicaSetAvailable}
    - type: Object
      object: {replicas: 1, image: "nginx:1.27", ratio: 0.5}
    - {type: "Null"}
- name: deployments-aggregator
  columnNames: [count, sumAvailable, minAvailable, maxAvailable, avgAvailable]
  rows:
  - columns:
    - {type: Number, float: "1"}
    - {type: Number, float: "1"}
    - {type: Number, float: "1"}
    - {type: Number, float: "1"}
    - {type: Number, float: "1"}
`

// csDevTwo: two dev clusters with two replicas each, a third whose row failed. No Number is "1".
const csDevTwo = csMetaNginx + `
results:
- name: deployment-status
  columnNames: [cluster, availableReplicas, paused, conditions, spec, observedAt]
  rows:
  - columns:
    - {type: String, string: cluster-dev-2}
    - {type: Number, float: "2"}
    - {type: Bool, bool: false}
    - type: Object
      object:
      - {type: Available, status: "True"}
    - type: Object
      object: {replicas: 2, image: "nginx:1.27"}
    - {type: "Null"}
  - columns:
    - {type: String, string: cluster-dev-1}
    - {type: Number, float: "2"}
    - {type: Bool, bool: true}
    - type: Object
      object:
      - {type: Available, status: "False"}
    - type: Object
      object: {replicas: 2, image: "nginx:1.27"}
    - {type: "Null"}
- name: deployments-aggregator
  columnNames: [count, sumAvailable, minAvailable, maxAvailable, avgAvailable]
  rows:
  - columns:
    - {type: Number, float: "2"}
    - {type: Number, float: "4"}
    - {type: Number, float: "2"}
    - {type: Number, float: "2"}
    - {type: Number, float: "2"}
  rowErrors:
  - wec: {clusterId: cluster-dev-3}
    columnName: sumAvailable
    error: "no such key: availableReplicas"
  aggregationErrors:
  - columnName: maxAvailable
    error: "subject is not a number: \"n/a\""
- name: replicas-by-image
  columnNames: [image, count]
  rows:
  - columns:
    - {type: String, string: "nginx:1.27"}
    - {type: Number, float: "2"}
`

// csZero: no cluster has reported. The aggregation still has its one row; the select collector has no
// rows; the Binding's second collector "ghost-collector" does not exist, so it has no entry.
const csZero = csMetaNginx + `
results:
- name: deployment-status
  columnNames: [cluster, availableReplicas, paused, conditions, spec, observedAt]
- name: deployments-aggregator
  columnNames: [count, sumAvailable, minAvailable, maxAvailable, avgAvailable]
  rows:
  - columns:
    - {type: Number, float: "0"}
    - {type: Number, float: "0"}
    - {type: Number, float: "+Inf"}
    - {type: Number, float: "-Inf"}
    - {type: Number, float: "NaN"}
  aggregationErrors:
  - columnName: avgAvailable
    error: no values to average
`

// csNumbers: number formats, and rows longer and shorter than the column names.
const csNumbers = csMetaNginx + `
results:
- name: numbers
  columnNames: [int, frac, big, tiny, posInf, negInf, nan, neg]
  rows:
  - columns:
    - {type: Number, float: "2"}
    - {type: Number, float: "2.5"}
    - {type: Number, float: "1e+21"}
    - {type: Number, float: "1e-07"}
    - {type: Number, float: "+Inf"}
    - {type: Number, float: "-Inf"}
    - {type: Number, float: "NaN"}
    - {type: Number, float: "-0.5"}
- name: ragged
  columnNames: [a, b]
  rows:
  - columns:
    - {type: Number, float: "1"}
    - {type: Number, float: "2"}
    - {type: Number, float: "3"}
  - columns:
    - {type: Number, float: "4"}
`

// csBadNumber: a Number whose string does not parse.
const csBadNumber = csMetaNginx + `
results:
- name: deployments-aggregator
  columnNames: [count]
  rows:
  - columns:
    - {type: Number, float: "1,5"}
`

// csNamespace: the CombinedStatus of a cluster-scoped object (a Namespace).
const csNamespace = `
apiVersion: control.kubestellar.io/v1alpha1
kind: CombinedStatus
metadata:
  name: 0a1b2c3d-0000-4000-8000-000000000001.2c9d0e7f-11aa-4c3b-8d2e-5f6a7b8c9d01
  namespace: kubestellar-report
  uid: 7c2f3a4b-5d6e-4f70-8192-a3b4c5d6e7f8
  resourceVersion: "815"
  generation: 1
  labels:
    status.kubestellar.io/api-group: ""
    status.kubestellar.io/resource: namespaces
    status.kubestellar.io/namespace: ""
    status.kubestellar.io/name: team-a
    status.kubestellar.io/binding-policy: nginx-staged-bindingpolicy.stage.dev
results:
- name: namespace-phase
  columnNames: [cluster, phase]
  rows:
  - columns:
    - {type: String, string: cluster-dev-1}
    - {type: String, string: Active}
`

// decode turns a YAML fixture into unstructured content as an informer holds it.
func decode(t testing.TB, doc string) map[string]any {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return obj
}

// csInput wraps a decoded fixture with its UID and a resourceVersion. Several fixtures are versions of
// one object (same UID), so the resourceVersion is derived from the content, as the API server would
// give each version its own.
func csInput(t testing.TB, doc string) *CSInput {
	t.Helper()
	obj := decode(t, doc)
	meta := obj["metadata"].(map[string]any)
	h := fnv.New64a()
	_, _ = h.Write([]byte(doc))
	return &CSInput{UID: meta["uid"].(string), ResourceVersion: strconv.FormatUint(h.Sum64(), 10), Object: obj}
}

// deploymentClause is the Binding entry of the README example's Deployment.
var deploymentClause = DownsyncClause{
	Group: "apps", Version: "v1", Resource: "deployments", Namespace: "nginx", Name: "nginx-deployment",
	ResourceVersion: "1234", StatusCollectors: []string{"deployment-status", "deployments-aggregator"},
}

// namespaceClause is the Binding entry of a cluster-scoped Namespace.
var namespaceClause = DownsyncClause{
	Group: "", Version: "v1", Resource: "namespaces", Name: "team-a", ResourceVersion: "77",
	StatusCollectors: []string{"namespace-phase"},
}

// bigSelectCS builds a CombinedStatus with one select collector ("deployment-status") of n rows, one
// per cluster, and the aggregation; every select Number is "2".
func bigSelectCS(n int, uid, rv string) *CSInput {
	rows := make([]any, n)
	for i := range rows {
		rows[i] = map[string]any{"columns": []any{
			map[string]any{"type": "String", "string": "cluster-" + strconv.Itoa(i)},
			map[string]any{"type": "Number", "float": "2"},
			map[string]any{"type": "Bool", "bool": true},
			map[string]any{"type": "Object", "object": []any{
				map[string]any{"type": "Available", "status": "True"},
			}},
		}}
	}
	count := strconv.Itoa(n)
	return &CSInput{UID: uid, ResourceVersion: rv, Object: map[string]any{
		"apiVersion": "control.kubestellar.io/v1alpha1",
		"kind":       "CombinedStatus",
		"metadata": map[string]any{
			"name": "big." + uid, "namespace": "nginx", "uid": uid, "resourceVersion": rv, "generation": int64(1),
			"labels": map[string]any{"status.kubestellar.io/api-group": "apps"},
		},
		"results": []any{
			map[string]any{
				"name":        "deployment-status",
				"columnNames": []any{"cluster", "availableReplicas", "ready", "conditions"},
				"rows":        rows,
			},
			map[string]any{
				"name":        "deployments-aggregator",
				"columnNames": []any{"count"},
				"rows": []any{map[string]any{"columns": []any{
					map[string]any{"type": "Number", "float": count},
				}}},
			},
		},
	}}
}

func bigUID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }
