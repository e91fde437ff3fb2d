// Command registrygen writes everything that follows from drover's registry of controllers
// (internal/registry), so that a controller is described once, in its own package:
//
//   - internal/scheme/zz_generated.scheme.go: the API packages of every controller's Objects;
//   - config/components/<controller>/: one kustomize Component per controller with its CRDs (crd/), its RBAC
//     (role.yaml, from the +kubebuilder:rbac markers of its package, run through controller-gen) and its
//     webhook configurations (webhooks.yaml, from its kit.Webhook declarations);
//   - the conversion stanza of each CRD a controller lists in ConversionCRDs (a webhook at the manager's
//     Service, path /convert), and config/certmanager's patch giving such a CRD cert-manager's CA injection;
//   - config/crd/kustomization.yaml (every controller's CRDs) and config/default/kustomization.yaml (the base
//     plus every component);
//   - the controller table of README.md, between its markers.
//
// It is run by `make manifests`:
//
//	registrygen -crds DIR -controller-gen BIN
//
// DIR holds the CRDs controller-gen generated from api/; each is moved to the component of the controller
// that lists it in CRDs. A CRD no controller lists, or a listed CRD that was not generated, is an error.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/drover-dev/drover/internal/registry"
)

func main() {
	crds := flag.String("crds", "", "directory of the CRDs controller-gen generated")
	controllerGen := flag.String("controller-gen", "bin/controller-gen", "controller-gen binary (for each component's RBAC)")
	root := flag.String("root", ".", "repository root")
	flag.Parse()
	if *crds == "" {
		fmt.Fprintln(os.Stderr, "usage: registrygen -crds DIR [-controller-gen BIN] [-root DIR]")
		os.Exit(2)
	}
	g := &generator{root: *root, crdDir: *crds, controllerGen: *controllerGen, controllers: registry.Registry()}
	if err := g.run(); err != nil {
		fmt.Fprintln(os.Stderr, "registrygen:", err)
		os.Exit(1)
	}
}
