// Package e2e holds the end-to-end tests: the local cluster (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kwok fake nodes) with the real manager binary running as its ServiceAccount.
//
// The suite starts its own cluster under .local/e2e (ports chosen free), so it runs next to a `make run`
// cluster without touching it. The manager binary is $DROVER_MANAGER, else <repo>/bin/drover-manager.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/drover-dev/drover/internal/localcluster"
	"github.com/drover-dev/drover/internal/scheme"
)

var (
	cluster *localcluster.Cluster
	// k8sClient is an admin client that knows drover's types.
	k8sClient client.Client
	// suiteCtx lives as long as the suite.
	suiteCtx    context.Context
	suiteCancel context.CancelFunc
	// failures counts failed specs, to print the manager's log at the end.
	failures int
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "e2e")
}

var _ = BeforeSuite(func() {
	ctrllog.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	suiteCtx, suiteCancel = context.WithCancel(context.Background())

	root, err := localcluster.FindRepoRoot("")
	Expect(err).NotTo(HaveOccurred())
	manager := os.Getenv("DROVER_MANAGER")
	if manager == "" {
		manager = filepath.Join(root, "bin", "drover-manager")
	}
	Expect(manager).To(BeAnExistingFile(), "build the manager first: make build (or set DROVER_MANAGER)")

	// DROVER_E2E_DIR lets two runs share a checkout (each cluster needs its own directory).
	dir := os.Getenv("DROVER_E2E_DIR")
	if dir == "" {
		dir = filepath.Join(root, ".local", "e2e")
	}
	began := time.Now()
	cluster, err = localcluster.Start(suiteCtx, localcluster.Options{
		RepoRoot:      root,
		Dir:           filepath.Join(dir, "cluster"),
		Kubeconfig:    filepath.Join(dir, "kubeconfig"),
		ManagerBinary: manager,
		ManagerArgs:   managerArgs(),
		Logger:        ctrllog.Log.WithName("localcluster"),
	})
	if err != nil {
		Fail(err.Error()) // the error names the process at fault and ends with its log
	}
	GinkgoWriter.Printf("Local cluster up in %s (kubeconfig %s)\n", time.Since(began).Round(time.Millisecond), cluster.Kubeconfig)

	k8sClient, err = client.New(cluster.Config, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if cluster != nil {
		if failures > 0 {
			// Straight to stderr: GinkgoWriter output of a passing node is not shown without -v.
			fmt.Fprintf(os.Stderr, "\n%d spec(s) failed; end of the manager log %s:\n%s\n",
				failures, cluster.ManagerLog(), localcluster.TailFile(cluster.ManagerLog(), 80))
		}
		Expect(cluster.Stop()).To(Succeed())
	}
	if suiteCancel != nil {
		suiteCancel()
	}
})

// On a failed spec, attach the end of the manager's and kssim's logs (and any crash of a cluster process) to its report.
var _ = AfterEach(func() {
	if !CurrentSpecReport().Failed() || cluster == nil {
		return
	}
	failures++
	AddReportEntry("manager log (end of "+cluster.ManagerLog()+")", localcluster.TailFile(cluster.ManagerLog(), 30))
	if kssimLog := cluster.LogPath(localcluster.Kssim); fileSize(kssimLog) > 0 {
		AddReportEntry("kssim log (end of "+kssimLog+")", localcluster.TailFile(kssimLog, 20))
	}
	if err := cluster.Err(); err != nil {
		AddReportEntry("cluster process failure", err.Error())
	}
})

// managerArgs are the manager's extra flags: $DROVER_MANAGER_ARGS, or by default the debug log level, so that
// the log of a failed run (its end is printed) shows every pass's plan (V(1)), and PersistentPodState's
// retries of unavailable targets and informer waits in seconds rather than the default 30 and 10.
func managerArgs() []string {
	if v, ok := os.LookupEnv("DROVER_MANAGER_ARGS"); ok {
		return strings.Fields(v)
	}
	return []string{"--zap-log-level=debug", "--pps-kind-retry-interval=5s", "--pps-informer-sync-timeout=5s"}
}
