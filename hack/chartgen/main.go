// Command chartgen writes the generated part of the Helm chart charts/drover from the same sources as
// config/: the components hack/registrygen wrote (config/components/<controller>/{crd/*.yaml, role.yaml,
// webhooks.yaml}), the manager's base role (config/rbac/role.yaml), the registry (internal/registry) and the
// repository's VERSION file. It writes:
//
//   - charts/drover/Chart.yaml, whose version and appVersion are the contents of VERSION;
//   - charts/drover/templates/generated/: one template per CRD (rendered when its controller is enabled and
//     crds.<plural>.install is true; refusing to take over a CRD another installation owns), one per
//     controller for its RBAC and one for its webhook configurations (rendered when
//     controllers.<key>.enabled), the manager's base RBAC, and _registry.tpl, the registry as data for the
//     hand-written helpers (--controllers, the uninstall guard's CRD list, value checks).
//
// Everything else in charts/drover (values.yaml, the Deployment, the Services, the helpers, ...) is written by
// hand; chartgen never touches it, and removes any file of templates/generated it did not write.
//
// It is run by `make manifests`, after registrygen:
//
//	chartgen [-root DIR]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/drover-dev/drover/internal/registry"
)

func main() {
	root := flag.String("root", ".", "repository root")
	flag.Parse()
	g := &generator{root: *root, controllers: registry.Registry()}
	if err := g.run(); err != nil {
		fmt.Fprintln(os.Stderr, "chartgen:", err)
		os.Exit(1)
	}
}
