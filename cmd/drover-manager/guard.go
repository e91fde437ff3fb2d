package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-dev/drover/internal/uninstallguard"
)

// guardCommand is the subcommand the Helm chart's pre-delete hook runs from the manager's image.
const guardCommand = "uninstall-guard"

// runUninstallGuard refuses (exits non-zero, naming the objects) while objects of the given CRDs' kinds
// exist; see internal/uninstallguard.
func runUninstallGuard(args []string) error {
	fs := flag.NewFlagSet(guardCommand, flag.ContinueOnError)
	crds := fs.String("crds", "", "Comma-separated CRD names (<plural>.<group>) whose objects block an uninstall.")
	kubeconfig := fs.String("kubeconfig", "", "Path to a kubeconfig; without it, $KUBECONFIG or the in-cluster configuration.")
	timeout := fs.Duration("timeout", time.Minute, "How long the check may take.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	names := splitList(*crds)
	if len(names) == 0 {
		return fmt.Errorf("%s: --crds names no CRD", guardCommand)
	}
	cfg, err := ctrl.GetConfig()
	if *kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", *kubeconfig)
	}
	if err != nil {
		return fmt.Errorf("loading client configuration: %w", err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	report, err := uninstallguard.Check(ctx, c, c.RESTMapper(), names)
	if err != nil {
		return err
	}
	if len(report.Skipped) > 0 {
		fmt.Fprintln(os.Stderr, "not served, nothing to protect:", strings.Join(report.Skipped, ", "))
	}
	if report.Blocked() {
		fmt.Fprintln(os.Stderr, report)
		return uninstallguard.ErrBlocked
	}
	fmt.Println(report)
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
