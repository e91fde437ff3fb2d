// Command kscrdpatch adds to the BindingPolicy CRD generated from api/kubestellar/control/v1alpha1 the
// validation that KubeStellar's installed CRD carries and controller-gen markers cannot express, in place:
//
//		kscrdpatch config/crd/kubestellar/control.kubestellar.io_bindingpolicies.yaml
//
//	  - the label selectors of spec.clusterSelectors get patterns: label values in matchLabels and
//	    matchExpressions[].values[], qualified label names in matchExpressions[].key, and the four operators in
//	    matchExpressions[].operator (the selectors are metav1.LabelSelector, whose schema markers cannot be
//	    amended);
//	  - each item of spec.downsync must carry at least one of the keys of its object test (an anyOf of required
//	    keys; key presence only, an empty value counts).
//
// Running it twice gives the same file.
package main

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/drover-dev/drover/hack/crdschema"
)

// crdName is the only CRD the command patches.
const crdName = "bindingpolicies.control.kubestellar.io"

// Patterns of the clusterSelectors label selectors.
const (
	// LabelValuePattern matches a label value: empty, or at most alphanumerics, '-', '_' and '.' starting and
	// ending with an alphanumeric (the length is not bounded).
	LabelValuePattern = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// LabelKeyPattern matches a label key: an optional DNS subdomain prefix and '/', then a name as in a value
	// but not empty.
	LabelKeyPattern = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
	// OperatorPattern matches the operators of a label selector requirement.
	OperatorPattern = `^(In|NotIn|Exists|DoesNotExist)$`
)

// DownsyncTestKeys are the keys of which each spec.downsync item must carry at least one.
var DownsyncTestKeys = []string{"apiGroup", "resources", "namespaces", "namespaceSelectors", "objectSelectors", "objectNames"}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kscrdpatch BINDINGPOLICY-CRD-FILE")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "kscrdpatch:", err)
		os.Exit(1)
	}
}

func run(file string) error {
	in, err := os.ReadFile(file) //nolint:gosec // the file to patch is the command's argument
	if err != nil {
		return fmt.Errorf("reading CRD: %w", err)
	}
	out, err := Patch(in)
	if err != nil {
		return fmt.Errorf("patching %s: %w", file, err)
	}
	if err := os.WriteFile(file, out, 0o644); err != nil { //nolint:gosec // generated manifests are world-readable
		return fmt.Errorf("writing CRD: %w", err)
	}
	return nil
}

// Patch returns the BindingPolicy CRD document in (controller-gen's YAML, one document) with the patterns and
// the anyOf added to every version's schema, as YAML starting with `---`.
func Patch(in []byte) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(in, &crd); err != nil {
		return nil, fmt.Errorf("decoding CRD: %w", err)
	}
	metadata, _ := crd["metadata"].(map[string]any)
	if name, _ := metadata["name"].(string); name != crdName {
		return nil, fmt.Errorf("CRD %q is not %s", name, crdName)
	}
	if err := crdschema.EachVersion(crd, patchSchema); err != nil {
		return nil, err
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, fmt.Errorf("encoding CRD: %w", err)
	}
	return append([]byte("---\n"), out...), nil
}

// patchSchema adds the patterns and the anyOf to one version's root schema.
func patchSchema(root map[string]any) error {
	patterns := map[string]string{
		"spec.clusterSelectors[].matchLabels{}":               LabelValuePattern,
		"spec.clusterSelectors[].matchExpressions[].key":      LabelKeyPattern,
		"spec.clusterSelectors[].matchExpressions[].operator": OperatorPattern,
		"spec.clusterSelectors[].matchExpressions[].values[]": LabelValuePattern,
	}
	for path, pattern := range patterns {
		node, err := lookup(root, path)
		if err != nil {
			return err
		}
		node["pattern"] = pattern
	}
	clause, err := lookup(root, "spec.downsync[]")
	if err != nil {
		return err
	}
	props, _ := clause["properties"].(map[string]any)
	anyOf := make([]any, 0, len(DownsyncTestKeys))
	for _, key := range DownsyncTestKeys {
		if _, ok := props[key]; !ok {
			return fmt.Errorf("spec.downsync[] has no property %q", key)
		}
		anyOf = append(anyOf, map[string]any{"required": []any{key}})
	}
	clause["anyOf"] = anyOf
	return nil
}

// lookup follows a dotted path of property names from a schema node; "name[]" steps into the items of the
// array name and "name{}" into the additionalProperties of the map name.
func lookup(root map[string]any, path string) (map[string]any, error) {
	node := root
	for seg := range strings.SplitSeq(path, ".") {
		name, child := seg, ""
		if n, ok := strings.CutSuffix(seg, "[]"); ok {
			name, child = n, "items"
		} else if n, ok := strings.CutSuffix(seg, "{}"); ok {
			name, child = n, "additionalProperties"
		}
		props, _ := node["properties"].(map[string]any)
		next, ok := props[name].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("schema path %q: no property %q", path, name)
		}
		if child != "" {
			if next, ok = next[child].(map[string]any); !ok {
				return nil, fmt.Errorf("schema path %q: %q has no %s schema", path, name, child)
			}
		}
		node = next
	}
	return node, nil
}
