package e2e

// The largest valid object of each of drover's six kinds, for the burst phase. Every list and map the CRD
// schema or the webhook bounds is at its bound, and strings are at their bound where a bound is set, as far as
// the object stays storable: etcd stores at most 1.5 MiB, managed fields included (one entry per key of a
// map), so where the bounds add up to more the object is cut down to about maxLargestBytes, and each builder
// says which lists are. TestAdmissionFuzzLargest checks each object with drover's own validation, its counts
// and its size.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kruisev1alpha1 "github.com/drover-dev/drover/api/kruise/apps/v1alpha1"
	communityv1alpha1 "github.com/drover-dev/drover/api/kubestellar/community/v1alpha1"
	controlv1alpha1 "github.com/drover-dev/drover/api/kubestellar/control/v1alpha1"
	openyurtv1alpha1 "github.com/drover-dev/drover/api/openyurt/apps/v1alpha1"
	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	tkestackv1 "github.com/drover-dev/drover/api/tkestack/apps/v1"
	"github.com/drover-dev/drover/internal/testutil"
)

// maxLargestBytes bounds the encoded size of a largest object: etcd refuses a write over 1.5 MiB, and the
// stored object carries its managed fields besides.
const maxLargestBytes = 1400 * 1024

// Bounds of the kinds that the API packages do not name as constants: the NodePool CRD's and the YurtAppDaemon
// CRD's (their markers), and the annotation size Kubernetes allows on any object.
const (
	maxPoolLabels, maxPoolAnnotations, maxPoolTaints = 128, 128, 64
	maxAnnotationsBytes                              = 256 * 1024
	maxTweaks, maxTweakPools                         = 32, 1000
	maxTweakImages, maxTweakPatches                  = 64, 500
	maxOwnerName                                     = 52 // the webhook's: ControllerRevision names stay label values
	// largestTAppInstances is the number of entries of the largest TApp's statuses and templates. Their bound is
	// 50,000 each (MaxReplicas), but both full (with a managed-field entry per key) are about 3.5 MiB.
	largestTAppInstances = 20000
)

// longKey returns the i-th of a set of distinct qualified names of the longest length, 317: a 253-character
// DNS subdomain prefix, "/", a 63-character name.
func longKey(tag string, i int) string {
	prefix := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)
	name := fmt.Sprintf("%s%d-", tag, i)
	return prefix + "/" + name + strings.Repeat("x", 63-len(name)-1) + "z"
}

// dnsName returns a valid lower-case name of exactly n characters starting with prefix.
func dnsName(prefix string, n int) string {
	if len(prefix) >= n {
		return prefix[:n]
	}
	return prefix + strings.Repeat("x", n-len(prefix)-1) + "z"
}

// largestNodePool: 128 labels of the longest key and value, 128 annotations of the longest key whose values
// fill the 256 KiB of annotations, 64 taints of the longest key and value.
func largestNodePool(name string) *openyurtv1beta1.NodePool {
	labels := make(map[string]string, maxPoolLabels)
	for i := range maxPoolLabels {
		labels[longKey("l", i)] = dnsName(fmt.Sprintf("v%d-", i), 63)
	}
	annotations := make(map[string]string, maxPoolAnnotations)
	valueLen := maxAnnotationsBytes/maxPoolAnnotations - len(longKey("a", 0)) - 8
	for i := range maxPoolAnnotations {
		annotations[longKey("a", i)] = strings.Repeat("v", valueLen)
	}
	effects := []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}
	taints := make([]corev1.Taint, maxPoolTaints)
	for i := range taints {
		taints[i] = corev1.Taint{Key: longKey("t", i), Value: dnsName(fmt.Sprintf("t%d-", i), 63), Effect: effects[i%len(effects)]}
	}
	return testutil.MakeNodePool(name).Type(openyurtv1beta1.Edge).Labels(labels).Annotations(annotations).Taints(taints...).Obj()
}

// largestOwner: a Deployment template and 32 tweaks, each naming 1,000 pools and holding 64 image changes and
// 500 patches, every one of which applies (labels of the child).
func largestOwner(kind, name, ns string) openyurtv1alpha1.Owner {
	labels := map[string]string{"app": "fz-burst"}
	spec := testutil.DeploymentSpec(labels, "nginx:1.27")
	spec.Replicas = ptr.To[int32](1)
	pools := make([]string, maxTweakPools)
	for i := range pools {
		pools[i] = "p" + strconv.Itoa(i)
	}
	images := make([]openyurtv1alpha1.ContainerImage, maxTweakImages)
	for i := range images {
		images[i] = openyurtv1alpha1.ContainerImage{Name: "main", TargetImage: "nginx:1.27-alpine"}
	}
	tweaks := make([]openyurtv1alpha1.WorkloadTweak, maxTweaks)
	for t := range tweaks {
		patches := make([]openyurtv1alpha1.Patch, maxTweakPatches)
		for j := range patches {
			patches[j] = openyurtv1alpha1.Patch{Path: fmt.Sprintf("/metadata/labels/t%d-%d", t, j),
				Operation: openyurtv1alpha1.PatchAdd, Value: rawJSON(`"v"`)}
		}
		tweaks[t] = openyurtv1alpha1.WorkloadTweak{Pools: pools,
			Tweaks: openyurtv1alpha1.Tweaks{Replicas: ptr.To[int32](0), ContainerImages: images, Patches: patches}}
	}
	return testutil.MakeOwner(kind, name, ns).Deployment(spec).TemplateMetadata(labels, nil).
		NodePoolSelectorLabels(map[string]string{fuzzTargetLabel: "true"}).Tweaks(tweaks...).Obj()
}

// largestTApp: 32 pool templates, 16 claim templates, and statuses and templates of largestTAppInstances
// instances each (see there), every instance on a pool template, every other one killed.
func largestTApp(name, ns string) *tkestackv1.TApp {
	labels := map[string]string{"app": "fz-burst-tapp"}
	tpl := func(image string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}}}
	}
	w := testutil.MakeTApp(name, ns).Replicas(tkestackv1.MaxReplicas).Template(tpl("nginx:1.27"))
	pools := make([]string, tkestackv1.MaxTemplatePool)
	for i := range pools {
		pools[i] = "pool-" + strconv.Itoa(i)
		w.Pool(pools[i], tpl("nginx:1.27-alpine"))
	}
	app := w.Obj()
	app.Spec.Statuses = make(map[string]tkestackv1.InstanceStatus, largestTAppInstances)
	app.Spec.Templates = make(map[string]string, largestTAppInstances)
	for i := range largestTAppInstances {
		id := strconv.Itoa(i)
		app.Spec.Templates[id] = pools[i%len(pools)]
		app.Spec.Statuses[id] = tkestackv1.InstanceStatus("Running")
		if i%2 == 1 {
			app.Spec.Statuses[id] = tkestackv1.InstanceStatus("Killed")
		}
	}
	for i := range tkestackv1.MaxVolumeClaimTemplates {
		app.Spec.VolumeClaimTemplates = append(app.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data-" + strconv.Itoa(i)},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		})
	}
	return app
}

// largestPPS: a required term of 32 keys, 16 preferred terms of 32 keys, 32 persisted annotations, every key of
// the longest length, and a target name of the longest length.
func largestPPS(name, ns, target string) *kruisev1alpha1.PersistentPodState {
	keys := func(tag string) []string {
		out := make([]string, kruisev1alpha1.MaxTopologyKeys)
		for i := range out {
			out[i] = longKey(tag, i)
		}
		return out
	}
	pps := testutil.MakePPS(name, ns, "").Obj()
	pps.Generation = 0
	pps.Spec = kruisev1alpha1.PersistentPodStateSpec{
		TargetRef:                         kruisev1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: dnsName(target, 253)},
		RequiredPersistentTopology:        &kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: keys("r")},
		PersistentPodStateRetentionPolicy: kruisev1alpha1.RetainWhenDeleted,
	}
	for i := range kruisev1alpha1.MaxPreferredTerms {
		pps.Spec.PreferredPersistentTopology = append(pps.Spec.PreferredPersistentTopology, kruisev1alpha1.PreferredTopologyTerm{
			Weight: int32(100 - i), Preference: kruisev1alpha1.NodeTopologyTerm{NodeTopologyKeys: keys(fmt.Sprintf("p%d-", i))}})
	}
	for i := range kruisev1alpha1.MaxPersistentPodAnnotations {
		pps.Spec.PersistentPodAnnotations = append(pps.Spec.PersistentPodAnnotations, kruisev1alpha1.PersistentPodAnnotation{Key: longKey("n", i)})
	}
	return pps
}

// largestSBP: a name of 63 characters and 32 stages named with 63 characters, each with a soak, a deadline and
// approval. Every expression field of every stage is set, each exists nested as deep as its share of the total
// length bound allows (fitCEL), the 96 together exactly MaxTotalExpressionLength characters long; or, with
// costliest, the expressions are conditions of the costliest shape at the node bound (costliestCEL), as many
// as the total length allows. round makes the expressions distinct from other rounds'.
func largestSBP(name string, round int, costliest bool) *communityv1alpha1.StagedBindingPolicy {
	sbp := &communityv1alpha1.StagedBindingPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: communityv1alpha1.GroupVersion.String(), Kind: "StagedBindingPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: dnsName(name, communityv1alpha1.MaxNameLength)},
	}
	sbp.Spec.Downsync = []controlv1alpha1.DownsyncPolicyClause{{
		DownsyncObjectTest: controlv1alpha1.DownsyncObjectTest{
			ObjectSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"app.kubernetes.io/name": fuzzSBPApp}}},
		},
		DownsyncModulation: controlv1alpha1.DownsyncModulation{StatusCollectors: []string{fuzzSBPCollector}},
	}}
	sbp.Spec.Mode = communityv1alpha1.ModeCumulative
	n := communityv1alpha1.MaxStages * len(celFields)
	share, longer := communityv1alpha1.MaxTotalExpressionLength/n, communityv1alpha1.MaxTotalExpressionLength%n
	total := 0
	for i := range communityv1alpha1.MaxStages {
		st := communityv1alpha1.Stage{
			Name:             dnsName(fmt.Sprintf("s%d-", i), 63),
			ClusterSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{fuzzSBPTier: "dev"}}},
			MinDuration:      &metav1.Duration{Duration: time.Minute},
			ProgressDeadline: &metav1.Duration{Duration: time.Hour},
			RequireApproval:  true,
		}
		if costliest {
			if e := costliestCEL(round*1000 + i); total+len(e) <= communityv1alpha1.MaxTotalExpressionLength {
				st.Condition, total = e, total+len(e)
			}
		} else {
			exprs := make([]string, len(celFields))
			for f, field := range celFields {
				e := i*len(celFields) + f
				exprs[f] = fitCEL(field, fmt.Sprintf("r%d-%d", round, e), share+btoi(e < longer))
			}
			st.Filter, st.Condition, st.FailureCondition = exprs[0], exprs[1], exprs[2]
		}
		sbp.Spec.Stages = append(sbp.Spec.Stages, st)
	}
	return sbp
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
