// Command kubectl-drover is drover's kubectl plugin: installed on the PATH as kubectl-drover, it runs as
// `kubectl drover <command>`. It talks to the cluster of the current kubeconfig context with the user's own
// credentials.
//
//	kubectl drover preview tapp [-n NAMESPACE | -A] [-v]
//
// preview reads (never writes) the objects another controller left and prints what drover's first passes
// would do to each: adopt, relabel, update in place, recreate, create, delete or keep, and why. Run it before
// switching from the upstream controller (docs/migrate/).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-dev/drover/internal/preview"
	"github.com/drover-dev/drover/internal/scheme"
	"github.com/drover-dev/drover/internal/tapp"
	"github.com/drover-dev/drover/internal/tapp/core"
	"github.com/drover-dev/drover/internal/version"
)

const usage = `kubectl drover: drover's kubectl plugin.

Commands:
  preview tapp [-n NAMESPACE | -A] [-v]   what drover would do to the TApps and pods of a namespace (read only)
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
}

func runPreview(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("preview needs a kind: tapp")
	}
	kind, args := args[0], args[1:]
	previewer, ok := previewers[kind]
	if !ok {
		return fmt.Errorf("preview: unknown kind %q (known: tapp)", kind)
	}
	fs := flag.NewFlagSet("preview", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "Path to a kubeconfig (default: $KUBECONFIG or ~/.kube/config).")
	kubeContext := fs.String("context", "", "The kubeconfig context to use (default: the current one).")
	namespace := fs.String("n", "", "Namespace (default: the context's namespace).")
	all := fs.Bool("A", false, "Every namespace.")
	verbose := fs.Bool("v", false, "List the objects left as they are too.")
	timeout := fs.Duration("timeout", time.Minute, "How long reading the cluster may take.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: *kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
		&clientcmd.ConfigOverrides{CurrentContext: *kubeContext})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns := *namespace
	if ns == "" && !*all {
		if ns, _, err = loader.Namespace(); err != nil {
			return fmt.Errorf("reading the context's namespace: %w", err)
		}
	}
	if *all {
		ns = ""
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return fmt.Errorf("creating a client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	reports, err := previewer(ctx, c, ns)
	if err != nil {
		return err
	}
	return preview.Write(out, reports, *verbose)
}
