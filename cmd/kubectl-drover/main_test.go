package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunCommandLines(t *testing.T) {
	tests := map[string]struct {
		args    []string
		out     string
		wantErr string
	}{
		"usage without a command":               {args: nil, out: "preview tapp"},
		"version":                               {args: []string{"version"}, out: "kubectl-drover "},
		"unknown command":                       {args: []string{"frobnicate"}, wantErr: `unknown command "frobnicate"`},
		"usage names the YurtAppDaemon preview": {args: []string{"help"}, out: "preview yurtappdaemon|uniteddaemonset"},
		"preview without a kind":                {args: []string{"preview"}, wantErr: "preview needs a kind: persistentpodstate, stagedbindingpolicy, tapp, uniteddaemonset, yurtappdaemon"},
		"preview of an unknown kind": {
			args: []string{"preview", "widgets"}, wantErr: `preview: unknown kind "widgets" (known: persistentpodstate, stagedbindingpolicy, tapp, uniteddaemonset, yurtappdaemon)`,
		},
		"preview yurtappdaemon reads the kubeconfig": {
			args: []string{"preview", "yurtappdaemon", "--kubeconfig", "/nonexistent/kubeconfig"}, wantErr: "loading the kubeconfig",
		},
		"usage names the StagedBindingPolicy preview": {args: []string{"help"}, out: "preview stagedbindingpolicy [-v]"},
		"preview stagedbindingpolicy reads the kubeconfig": {
			args: []string{"preview", "stagedbindingpolicy", "--kubeconfig", "/nonexistent/kubeconfig"}, wantErr: "loading the kubeconfig",
		},
		"rollback of an unknown kind": {args: []string{"rollback", "yurtappdaemon"}, wantErr: `rollback: unknown kind "yurtappdaemon" (known: tapp)`},
		"a kubeconfig that does not exist": {
			args: []string{"preview", "tapp", "--kubeconfig", "/nonexistent/kubeconfig"}, wantErr: "loading the kubeconfig",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tc.args, &out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.out) {
				t.Errorf("output %q does not contain %q", out.String(), tc.out)
			}
		})
	}
}
