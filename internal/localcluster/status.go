package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the server-side apply field manager of what drover-local applies.
const FieldOwner = "drover-local"

// ApplyDir server-side applies every object in the *.yaml, *.yml and *.json files of dir (kustomization
// files excepted), in file name order (ApplyFile). A missing directory applies nothing. It returns
// "Kind/name" for each object applied.
func ApplyDir(ctx context.Context, c client.Client, dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var applied []string
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") || strings.HasPrefix(e.Name(), "kustomization.") {
			continue
		}
		done, err := ApplyFile(ctx, c, filepath.Join(dir, e.Name()))
		applied = append(applied, done...)
		if err != nil {
			return applied, err
		}
	}
	return applied, nil
}

// ApplyFile server-side applies the objects of one YAML or JSON file, in order; namespaced objects without
// a namespace go to "default". An object whose kind is not served yet (its CRD was applied just before) is
// retried for up to 30 seconds. It returns "Kind/name" for each object applied.
func ApplyFile(ctx context.Context, c client.Client, path string) ([]string, error) {
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	objs, err := DecodeYAML(data)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var applied []string
	for _, o := range objs {
		if err := applyObject(ctx, c, o); err != nil {
			return applied, fmt.Errorf("applying %s %s from %s: %w", o.GetKind(), o.GetName(), path, err)
		}
		applied = append(applied, o.GetKind()+"/"+o.GetName())
	}
	return applied, nil
}

func applyObject(ctx context.Context, c client.Client, o *unstructured.Unstructured) error {
	mapping, err := c.RESTMapper().RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
	// An object of a kind whose CRD was applied just before: the API server serves it once the CRD is
	// established, in a second or so.
	for deadline := time.Now().Add(30 * time.Second); meta.IsNoMatchError(err) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		mapping, err = c.RESTMapper().RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
	}
	if err != nil {
		return err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace && o.GetNamespace() == "" {
		o.SetNamespace(metav1.NamespaceDefault)
	}
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// WaitNodePoolsCounted waits (up to timeout) until every NodePool's status counts as many nodes, and as many
// Ready nodes, as carry its pool label, i.e. the manager's NodePool controller has caught up with the new nodes. It reports
// whether they did; a cluster without NodePools counts as caught up.
func WaitNodePoolsCounted(ctx context.Context, c client.Client, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if nodePoolsCounted(ctx, c) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func nodePoolsCounted(ctx context.Context, c client.Client) bool {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return false
	}
	members, readyMembers := map[string]int64{}, map[string]int64{}
	for i := range nodes.Items {
		pool := nodes.Items[i].Labels[LabelNodePool]
		members[pool]++
		if NodeReady(&nodes.Items[i]) {
			readyMembers[pool]++
		}
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(nodePoolGVK.GroupVersion().WithKind("NodePoolList"))
	if err := c.List(ctx, list); err != nil {
		return meta.IsNoMatchError(err)
	}
	for _, np := range list.Items {
		ready, _, _ := unstructured.NestedInt64(np.Object, "status", "readyNodeNum")
		notReady, _, _ := unstructured.NestedInt64(np.Object, "status", "unreadyNodeNum")
		if ready+notReady != members[np.GetName()] || ready != readyMembers[np.GetName()] {
			return false
		}
	}
	return true
}

// WriteStatus prints the nodes per pool and the NodePools, the way `kubectl get np` shows them.
func WriteStatus(ctx context.Context, c client.Client, w io.Writer) error {
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	type count struct{ ready, total int }
	perPool := map[string]*count{}
	for i := range nodes.Items {
		pool := nodes.Items[i].Labels[LabelNodePool]
		if pool == "" {
			pool = "(none)"
		}
		if perPool[pool] == nil {
			perPool[pool] = &count{}
		}
		perPool[pool].total++
		if NodeReady(&nodes.Items[i]) {
			perPool[pool].ready++
		}
	}
	pools := make([]string, 0, len(perPool))
	for p := range perPool {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintf(tw, "Nodes: %d\nPOOL\tNODES\tREADY\n", len(nodes.Items))
	for _, p := range pools {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", p, perPool[p].total, perPool[p].ready)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(nodePoolGVK.GroupVersion().WithKind("NodePoolList"))
	if err := c.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			_, err = fmt.Fprintln(w, "\nNodePools: not served")
			return err
		}
		return fmt.Errorf("listing NodePools: %w", err)
	}
	fmt.Fprintf(tw, "\nNodePools: %d\nNAME\tTYPE\tREADYNODES\tNOTREADYNODES\tAGE\n", len(list.Items))
	for _, np := range list.Items {
		typ, _, _ := unstructured.NestedString(np.Object, "spec", "type")
		ready, _, _ := unstructured.NestedInt64(np.Object, "status", "readyNodeNum")
		notReady, _, _ := unstructured.NestedInt64(np.Object, "status", "unreadyNodeNum")
		age := duration.HumanDuration(time.Since(np.GetCreationTimestamp().Time))
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", np.GetName(), typ, ready, notReady, age)
	}
	return tw.Flush()
}
