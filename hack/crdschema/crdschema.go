// Package crdschema walks the versions of a generated CRD document, for the small tools under hack/ that add
// to controller-gen's output what its markers cannot express.
package crdschema

import (
	"errors"
	"fmt"
)

// EachVersion calls fn with the openAPIV3Schema root of every version of crd, a decoded CRD document. It
// fails on a CRD without versions or a version without a schema, and wraps an error of fn with the version's
// name.
func EachVersion(crd map[string]any, fn func(root map[string]any) error) error {
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return errors.New("CRD has no versions")
	}
	for _, v := range versions {
		version, _ := v.(map[string]any)
		schema, _ := version["schema"].(map[string]any)
		root, ok := schema["openAPIV3Schema"].(map[string]any)
		if !ok {
			return fmt.Errorf("version %v has no openAPIV3Schema", version["name"])
		}
		if err := fn(root); err != nil {
			return fmt.Errorf("version %v: %w", version["name"], err)
		}
	}
	return nil
}
