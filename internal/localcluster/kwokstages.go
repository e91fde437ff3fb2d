package localcluster

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// kubeletStages are drover's kwok Stages for pods (stages/*.yaml). kwok's stock stages keep playing the nodes
// (kustomize/stage/node/fast and node/heartbeat-with-lease); the pods are played by these, which report what a
// kubelet reports where drover's controllers depend on it:
//
//   - drover-pod-start replaces kwok's stock pod-ready stage: pods start Running with imageIDs and containerIDs,
//     and Ready honours readiness gates (a kubelet never writes a gate's condition itself);
//   - drover-pod-readiness keeps ContainersReady and Ready equal to what a kubelet computes as gates and
//     container readiness change;
//   - drover-pod-inplace-image reports an in-place image update: new image, imageID and containerID,
//     restartCount + 1;
//   - drover-pod-exit lets containers exit with the code of the annotation kwok.drover.dev/exit-code (after
//     kwok.drover.dev/run-seconds), finishing the pod or putting it in back-off per its restartPolicy;
//   - drover-pod-delete and drover-pod-job-complete are kwok's stock pod-delete and pod-complete (Job pods).
//
// Every stage leaves pods annotated kwok.drover.dev/disregard alone, as if their kubelet were gone: that is how
// a lost node's pods are simulated (kwok v0.8.0 does not reliably stop playing the pods of a node whose Lease it
// no longer holds: its pod controller is created with or without the lease check depending on map order).
// Every file documents its stage. They are written to <Dir>/kwok-stages at start (kwok reads --config files).
//
//go:embed stages/*.yaml
var kubeletStages embed.FS

// stockStages are kwok's stages (directories under kustomize/stage of the kwok module) that stay in use.
var stockStages = []string{"node/fast", "node/heartbeat-with-lease"}

// Annotations of the drover-pod-exit stage.
const (
	// AnnotationKwokExitCode makes every container of a pod on a kwok node exit with this code (decimal).
	AnnotationKwokExitCode = "kwok.drover.dev/exit-code"
	// AnnotationKwokRunSeconds is how long the containers run before they exit (default 0), counted from the
	// latest container start.
	AnnotationKwokRunSeconds = "kwok.drover.dev/run-seconds"
	// AnnotationKwokDisregard (any value) makes kwok leave a pod alone, as if its kubelet were gone: its status
	// is no longer changed and, once deleted, it stays Terminating until it is deleted with grace period 0.
	AnnotationKwokDisregard = "kwok.drover.dev/disregard"
)

// KubeletStageNames lists drover's kwok Stage files (base names), in the order they are passed to kwok.
func KubeletStageNames() ([]string, error) {
	entries, err := fs.ReadDir(kubeletStages, "stages")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && path.Ext(e.Name()) == ".yaml" {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// KubeletStage returns the content of one of drover's kwok Stage files.
func KubeletStage(name string) ([]byte, error) {
	return kubeletStages.ReadFile(path.Join("stages", name))
}

// writeKubeletStages writes drover's kwok Stages into dir and returns their paths.
func writeKubeletStages(dir string) ([]string, error) {
	names, err := KubeletStageNames()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	files := make([]string, 0, len(names))
	for _, name := range names {
		data, err := KubeletStage(name)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing kwok stage %s: %w", p, err)
		}
		files = append(files, p)
	}
	return files, nil
}
