package crdschema

import (
	"errors"
	"strings"
	"testing"
)

func TestEachVersion(t *testing.T) {
	version := func(name string, withSchema bool) map[string]any {
		v := map[string]any{"name": name}
		if withSchema {
			v["schema"] = map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-version": name}}
		}
		return v
	}
	crd := func(versions ...any) map[string]any {
		return map[string]any{"spec": map[string]any{"versions": versions}}
	}
	cases := map[string]struct {
		crd     map[string]any
		fail    error
		visited string
		wantErr string
	}{
		"every version visited in order": {crd: crd(version("v1", true), version("v2", true)), visited: "v1,v2"},
		"no versions":                    {crd: crd(), wantErr: "no versions"},
		"a version without a schema":     {crd: crd(version("v1", true), version("v2", false)), visited: "v1", wantErr: "version v2 has no openAPIV3Schema"},
		"an error of fn names its version": {
			crd: crd(version("v1", true)), fail: errors.New("boom"), visited: "v1", wantErr: "version v1: boom",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var visited []string
			err := EachVersion(tc.crd, func(root map[string]any) error {
				visited = append(visited, root["x-version"].(string))
				return tc.fail
			})
			if got := strings.Join(visited, ","); got != tc.visited {
				t.Errorf("visited %q, want %q", got, tc.visited)
			}
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
