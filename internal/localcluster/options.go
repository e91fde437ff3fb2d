// Package localcluster starts and stops drover's local cluster: etcd and kube-apiserver (through
// controller-runtime's envtest), kube-controller-manager, kube-scheduler, kwok with fake nodes spread over
// three NodePools and three zones, drover's and KubeStellar's CRDs, kssim (the KubeStellar stand-in),
// drover's webhooks and the real manager binary running as a ServiceAccount bound to its generated RBAC role.
//
// The webhooks are installed as in an installation, behind the Service drover-webhook-service, and the
// manager serves them with the certificate it creates itself (--cert-mode=self). The API server reaches
// Services through an HTTP CONNECT proxy of this process, its "cluster" egress selection (egress.go), and
// this package copies the certificate Secret into each manager's certificate directory as a kubelet keeps a
// Secret volume (kubelet.go).
//
// Every process is started from the binaries in bin/k8s and listens on 127.0.0.1 only, on ports chosen free
// at start. State and logs live under Options.Dir (one log file per process, see Cluster.LogPath); the PIDs
// of every process are recorded in Options.Dir/pids.json so that a later Start, or drover-local down, can
// kill what a crashed owner left behind.
//
// make run, make local-up/local-down (cmd/drover-local) and the e2e suite all use this package.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

const (
	// ModulePath is the Go module whose checkout is the repository root.
	ModulePath = "github.com/drover-dev/drover"
	// NodesEnv overrides the default number of fake nodes.
	NodesEnv = "DROVER_LOCAL_NODES"
	// DefaultNodes is the number of fake nodes when neither Options.Nodes nor $DROVER_LOCAL_NODES is set.
	DefaultNodes = 12
	// ManagerNamespace is the namespace the manager runs in (its ServiceAccount and leader-election Lease).
	ManagerNamespace = "drover-system"
	// ManagerServiceAccount is the ServiceAccount the manager authenticates as.
	ManagerServiceAccount = "drover-manager"
	// DefaultManagerLease is the leader-election Lease of cmd/drover-manager.
	DefaultManagerLease = "drover-manager.drover.dev"
)

// Options configure Start. The zero value is usable from anywhere inside the repository: every path
// defaults relative to the repository root.
type Options struct {
	// RepoRoot is the checkout of github.com/drover-dev/drover. Default: found by walking up from the
	// working directory (FindRepoRoot).
	RepoRoot string
	// Dir holds the state and logs of the cluster; it is wiped at Start. Default: <root>/.local/cluster.
	Dir string
	// Kubeconfig is where the admin kubeconfig is written. Default: <Dir>/../kubeconfig.
	Kubeconfig string
	// BinDir holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok.
	// Default: <root>/bin/k8s.
	BinDir string

	// ManagerBinary is drover's manager binary. Default: <root>/bin/drover-manager.
	ManagerBinary string
	// ManagerArgs are appended to the manager's command line (after the flags Start sets).
	ManagerArgs []string
	// ManagerLease is the manager's leader-election Lease in drover-system; Start waits until it is held.
	// Default: DefaultManagerLease. Set to "-" when the manager runs with --leader-elect=false.
	ManagerLease string
	// SkipManager starts everything but the manager (the webhooks are then not registered either).
	SkipManager bool

	// Nodes is the number of fake nodes. Default: $DROVER_LOCAL_NODES, else DefaultNodes.
	Nodes int

	// CRDDirs are installed before anything else starts. Default: every controller's
	// <root>/config/components/*/crd (skipped with a log line when it does not exist yet).
	CRDDirs []string
	// KubeStellarCRDDir holds KubeStellar's control.kubestellar.io CRDs and OCM's ManagedCluster CRD, installed
	// with drover's. Default: <root>/config/crd/kubestellar.
	KubeStellarCRDDir string
	// SkipKubeStellar installs neither KubeStellar's CRDs nor runs kssim.
	SkipKubeStellar bool
	// KssimBinary is the KubeStellar stand-in (cmd/kssim). Default: <root>/bin/kssim.
	KssimBinary string
	// KssimArgs are appended to kssim's command line (after the flags Start sets, so they override them).
	KssimArgs []string
	// SkipKssim starts everything but kssim; KubeStellar's CRDs are still installed.
	SkipKssim bool

	// WebhookManifests are the generated webhook configurations, installed with the manager as an
	// installation has them: named drover-<name>, calling the Service WebhookService in ManagerNamespace, no
	// caBundle (the manager injects its own CA). Default: every controller's
	// <root>/config/components/*/webhooks.yaml (no webhooks when there is none).
	WebhookManifests []string
	// RBACFiles hold the Roles and ClusterRoles the manager's ServiceAccount is bound to. Default: the
	// manager's own <root>/config/rbac/role.yaml and aggregated_role.yaml, and every controller's
	// <root>/config/components/*/role.yaml: exactly what an installation grants.
	RBACFiles []string

	// KwokStageDir is the sigs.k8s.io/kwok module directory; the node stages kustomize/stage/node/fast and
	// kustomize/stage/node/heartbeat-with-lease are read from it. Default: the version required by
	// <root>/hack/tools/kwok, from `go list -m`.
	//
	// The pods are played by drover's own stages (internal/localcluster/stages, written to <Dir>/kwok-stages)
	// instead of kwok's pod/fast ones: they make pods on kwok nodes look as a kubelet reports them (readiness
	// gates, in-place image updates, exiting containers); see kubeletStages.
	KwokStageDir string
	// KwokStages are extra kwok configuration files (Stages) passed with --config, after the default ones.
	KwokStages []string

	// APIServerArgs, ControllerManagerArgs, SchedulerArgs and KwokArgs are extra flags ("--name=value")
	// for those components.
	APIServerArgs         []string
	ControllerManagerArgs []string
	SchedulerArgs         []string
	KwokArgs              []string

	// StartTimeout bounds Start. Default: 5 minutes.
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits for a process after SIGTERM before it sends SIGKILL. Default: 20s.
	StopTimeout time.Duration

	// Logger receives progress lines. Default: the logger of the context passed to Start.
	Logger logr.Logger
}

// complete fills in the defaults and makes every path absolute.
func (o Options) complete(ctx context.Context) (Options, error) {
	if o.Logger.GetSink() == nil {
		o.Logger = ctrllog.FromContext(ctx)
	}
	var err error
	if o.RepoRoot == "" {
		if o.RepoRoot, err = FindRepoRoot(""); err != nil {
			return o, err
		}
	}
	o.completePaths()
	if o.Nodes == 0 {
		if o.Nodes, err = NodesFromEnv(); err != nil {
			return o, err
		}
	}
	if o.Nodes < 0 {
		return o, fmt.Errorf("nodes must not be negative, got %d", o.Nodes)
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 5 * time.Minute
	}
	if o.StopTimeout == 0 {
		o.StopTimeout = 20 * time.Second
	}
	return o, nil
}

// completePaths fills in the default paths and makes every path absolute, relative to the repository root.
func (o *Options) completePaths() {
	root := o.RepoRoot
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
		*p = abs(root, *p)
	}
	def(&o.Dir, filepath.Join(root, ".local", "cluster"))
	def(&o.Kubeconfig, filepath.Join(filepath.Dir(o.Dir), "kubeconfig"))
	def(&o.BinDir, filepath.Join(root, "bin", "k8s"))
	def(&o.ManagerBinary, filepath.Join(root, "bin", "drover-manager"))
	def(&o.KubeStellarCRDDir, filepath.Join(root, "config", "crd", "kubestellar"))
	def(&o.KssimBinary, filepath.Join(root, "bin", "kssim"))
	if o.ManagerLease == "" {
		o.ManagerLease = DefaultManagerLease
	}
	components := func(pattern string) []string {
		found, _ := filepath.Glob(filepath.Join(root, "config", "components", "*", pattern)) // a constant, valid pattern
		return found
	}
	if o.CRDDirs == nil {
		o.CRDDirs = components("crd")
	}
	if o.WebhookManifests == nil {
		o.WebhookManifests = components("webhooks.yaml")
	}
	if o.RBACFiles == nil {
		o.RBACFiles = append([]string{filepath.Join(root, "config", "rbac", "role.yaml"),
			filepath.Join(root, "config", "rbac", "aggregated_role.yaml")}, components("role.yaml")...)
	}
	// Copies, so that the caller's slices are not rewritten.
	o.CRDDirs, o.RBACFiles, o.KwokStages = slices.Clone(o.CRDDirs), slices.Clone(o.RBACFiles), slices.Clone(o.KwokStages)
	o.WebhookManifests = slices.Clone(o.WebhookManifests)
	o.ManagerArgs, o.KssimArgs = slices.Clone(o.ManagerArgs), slices.Clone(o.KssimArgs)
	for _, list := range [][]string{o.CRDDirs, o.RBACFiles, o.KwokStages, o.WebhookManifests} {
		for i := range list {
			list[i] = abs(root, list[i])
		}
	}
	if o.KwokStageDir != "" {
		o.KwokStageDir = abs(root, o.KwokStageDir)
	}
}

// NodesFromEnv returns $DROVER_LOCAL_NODES, or DefaultNodes when it is unset.
func NodesFromEnv() (int, error) {
	v := strings.TrimSpace(os.Getenv(NodesEnv))
	if v == "" {
		return DefaultNodes, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("$%s=%q is not a number of nodes", NodesEnv, v)
	}
	return n, nil
}

// FindRepoRoot walks up from dir (the working directory when empty) to the directory whose go.mod declares
// module github.com/drover-dev/drover.
func FindRepoRoot(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("finding the repository root: %w", err)
		}
		dir = wd
	}
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Clean(filepath.Join(d, "go.mod")))
		if err == nil && modulePathOf(string(data)) == ModulePath {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of module %s in %s or any parent directory", ModulePath, dir)
		}
	}
}

func modulePathOf(gomod string) string {
	for line := range strings.SplitSeq(gomod, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`)
		}
	}
	return ""
}

// kwokStageFiles lists the kwok stage configuration files: kwok's stock node stages from the kwok module,
// drover's pod stages (written to <Dir>/kwok-stages) and the extra ones.
func (o Options) kwokStageFiles(ctx context.Context) ([]string, error) {
	dir := o.KwokStageDir
	if dir == "" {
		var err error
		if dir, err = goListModuleDir(ctx, filepath.Join(o.RepoRoot, "hack", "tools", "kwok"), "sigs.k8s.io/kwok"); err != nil {
			return nil, fmt.Errorf("finding kwok's stage configurations (set Options.KwokStageDir): %w", err)
		}
	}
	var files []string
	for _, sub := range stockStages {
		d := filepath.Join(dir, "kustomize", "stage", filepath.FromSlash(sub))
		found, err := filepath.Glob(filepath.Join(d, "*.yaml"))
		if err != nil {
			return nil, err
		}
		n := 0
		for _, f := range found {
			if filepath.Base(f) != "kustomization.yaml" {
				files = append(files, f)
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("no kwok stages in %s", d)
		}
	}
	own, err := writeKubeletStages(filepath.Join(o.Dir, "kwok-stages"))
	if err != nil {
		return nil, err
	}
	files = append(files, own...)
	for _, f := range o.KwokStages {
		if !fileExists(f) {
			return nil, fmt.Errorf("kwok stage file %s does not exist", f)
		}
	}
	return append(files, o.KwokStages...), nil
}

// goListModuleDir runs `go list -m -f {{.Dir}} module` in dir.
func goListModuleDir(ctx context.Context, dir, module string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go list -m %s in %s: %w: %s", module, dir, err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("go list -m %s in %s: %w", module, dir, err)
	}
	d := strings.TrimSpace(string(out))
	if d == "" || !fileExists(d) {
		return "", fmt.Errorf("module %s is not downloaded", module)
	}
	return d, nil
}

func abs(root, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(root, p)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
