// Command kubectl-drover is drover's kubectl plugin: installed on the PATH as kubectl-drover, it runs as
// `kubectl drover <command>`. It talks to the cluster of the current kubeconfig context with the user's own
// credentials.
//
//	kubectl drover preview tapp|yurtappdaemon|uniteddaemonset|persistentpodstate [-n NAMESPACE | -A] [-v]
//	kubectl drover preview stagedbindingpolicy [-v]
//	kubectl drover rollback tapp [-n NAMESPACE | -A] [--dry-run]
//
// preview reads (never writes) the objects another controller left and prints what drover's first passes
// would do to each: adopt, relabel, update in place, recreate, create, delete or keep, and why. Run it before
// switching from the upstream controller (docs/migrate/). rollback prepares the objects for the upstream
// controller again, once drover's controller is stopped: it prints what it does, then does it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-dev/drover/internal/persistentpodstate"
	"github.com/drover-dev/drover/internal/persistentpodstate/whitelist"
	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/stagedbindingpolicy"
	"github.com/drover-dev/drover/internal/tapp"
	"github.com/drover-dev/drover/internal/tapp/core"
	"github.com/drover-dev/drover/internal/version"
	"github.com/drover-dev/drover/internal/yurtappdaemon"
)

const usage = `kubectl drover: drover's kubectl plugin.

Commands:
  preview tapp [-n NAMESPACE | -A] [-v]   what drover would do to the TApps and pods of a namespace (read only)
  preview yurtappdaemon|uniteddaemonset [-n NAMESPACE | -A] [-v]
                                          what drover would do to the children (Deployments, StatefulSets) and
                                          revisions of the YurtAppDaemons or UnitedDaemonSets (read only)
  preview persistentpodstate [-n NAMESPACE | -A] [-v]
                                          what drover would do to the records (status) of the
                                          PersistentPodStates and the PPS generated from workload annotations;
                                          reads them in v1alpha1, before drover's CRD is installed (read only)
  preview stagedbindingpolicy [-v]        what drover would do to the StagedBindingPolicies (cluster-scoped) and
                                          their BindingPolicies, as the KubeStellar workload stager left them
                                          (read only)
  rollback tapp [-n NAMESPACE | -A] [--dry-run]
                                          put TKEStack's hash labels back on the pods, after stopping drover's
                                          TApp controller and before starting TKEStack's
  version                                 the plugin's version

Flags of every command: --kubeconfig PATH, --context NAME.
`

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kubectl drover:", err)
		os.Exit(1)
	}
}

// run executes one command line (without the program name), writing its output to out.
func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		_, err := io.WriteString(out, usage)
		return err
	}
	switch args[0] {
	case "preview":
		return runPreview(ctx, args[1:], out)
	case "rollback":
		return runRollback(ctx, args[1:], out)
	case "version":
		_, err := fmt.Fprintln(out, "kubectl-drover", version.Get())
		return err
	case "help", "-h", "--help":
		_, err := io.WriteString(out, usage)
		return err
	}
	return fmt.Errorf("unknown command %q\n\n%s", args[0], usage)
}

// previewers are the kinds preview knows, by the name on the command line.
var previewers = map[string]func(ctx context.Context, c client.Reader, namespace string) ([]preview.Report, error){
	"tapp": func(ctx context.Context, c client.Reader, namespace string) ([]preview.Report, error) {
		// The manager's default for instances whose TApp leaves deletePodAfterAppFinish unset.
		return tapp.Preview(ctx, c, namespace, core.Options{DeletePodAfterAppFinish: true})
	},
	"persistentpodstate": func(ctx context.Context, c client.Reader, namespace string) ([]preview.Report, error) {
		// The whitelist the manager reads by default (--pps-whitelist-configmap in its namespace).
		return persistentpodstate.Preview(ctx, c, namespace, persistentpodstate.PreviewOptions{WhitelistConfigMap: types.NamespacedName{
			Namespace: persistentpodstate.DefaultManagerNamespace, Name: whitelist.DefaultConfigMapName}})
	},
	"yurtappdaemon":   yurtappdaemon.PreviewYurtAppDaemons,
	"uniteddaemonset": yurtappdaemon.PreviewUnitedDaemonSets,
	"stagedbindingpolicy": func(ctx context.Context, c client.Reader, _ string) ([]preview.Report, error) {
		return stagedbindingpolicy.Preview(ctx, c, time.Now()) // cluster-scoped: no namespace
	},
}

// target is what a command works on: a client of the kubeconfig's cluster and the namespace ("" for all).
type target struct {
	c         client.Client
	namespace string
	timeout   time.Duration
}

// parseTarget parses the flags every command shares, plus those extra adds to fs, and builds the client.
func parseTarget(fs *flag.FlagSet, args []string) (*target, error) {
	kubeconfig := fs.String("kubeconfig", "", "Path to a kubeconfig (default: $KUBECONFIG or ~/.kube/config).")
	kubeContext := fs.String("context", "", "The kubeconfig context to use (default: the current one).")
	namespace := fs.String("n", "", "Namespace (default: the context's namespace).")
	all := fs.Bool("A", false, "Every namespace.")
	timeout := fs.Duration("timeout", time.Minute, "How long the command may take.")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: *kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
		&clientcmd.ConfigOverrides{CurrentContext: *kubeContext})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns := *namespace
	if ns == "" && !*all {
		if ns, _, err = loader.Namespace(); err != nil {
			return nil, fmt.Errorf("reading the context's namespace: %w", err)
		}
	}
	if *all {
		ns = ""
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("creating a client: %w", err)
	}
	return &target{c: c, namespace: ns, timeout: *timeout}, nil
}

// kindArg splits the kind off a command's arguments and checks that known has it.
func kindArg(command string, args []string, known ...string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, fmt.Errorf("%s needs a kind: %s", command, strings.Join(known, ", "))
	}
	if !slices.Contains(known, args[0]) {
		return "", nil, fmt.Errorf("%s: unknown kind %q (known: %s)", command, args[0], strings.Join(known, ", "))
	}
	return args[0], args[1:], nil
}

func runPreview(ctx context.Context, args []string, out io.Writer) error {
	kind, args, err := kindArg("preview", args, slices.Sorted(maps.Keys(previewers))...)
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("preview", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "List the objects left as they are too.")
	t, err := parseTarget(fs, args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	reports, err := previewers[kind](ctx, t.c, t.namespace)
	if err != nil {
		return err
	}
	return preview.Write(out, reports, *verbose)
}

// runRollback prepares TApps and their pods for TKEStack's controller (the only kind that needs it so far).
func runRollback(ctx context.Context, args []string, out io.Writer) error {
	_, args, err := kindArg("rollback", args, "tapp")
	if err != nil {
		return err
	}
	fs := flag.NewFlagSet("rollback", flag.ContinueOnError)
	dryRun := fs.Bool("dry-run", false, "Print what the rollback does and change nothing.")
	t, err := parseTarget(fs, args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	reports, restores, err := tapp.PlanRollback(ctx, t.c, t.namespace)
	if err != nil {
		return err
	}
	if err := preview.Write(out, reports, false); err != nil {
		return err
	}
	if *dryRun {
		_, err := fmt.Fprintf(out, "dry run: %d pod(s) would get TKEStack's hash labels back\n", len(restores))
		return err
	}
	if err := tapp.ApplyRollback(ctx, t.c, restores); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%d pod(s) got TKEStack's hash labels back\n", len(restores))
	return err
}
