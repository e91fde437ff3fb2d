package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// managerTokenTTL is the lifetime of the manager's ServiceAccount token; the cluster is a development
// cluster, restarted far more often than that.
const managerTokenTTL = 30 * 24 * time.Hour

// ManagerUser is the user name the manager authenticates as.
const ManagerUser = "system:serviceaccount:" + ManagerNamespace + ":" + ManagerServiceAccount

// nodePoolGVK is the version of NodePool the cluster writes and reads its pools in: the storage version, which
// the API server reads without calling the manager's conversion webhook (so a status is printed while the
// manager is down).
var nodePoolGVK = schema.GroupVersionKind{Group: "apps.openyurt.io", Version: "v1beta2", Kind: "NodePool"}

// startManager creates the manager's namespace, ServiceAccount and RBAC bindings, writes a kubeconfig with
// a ServiceAccount token, installs the webhooks (installWebhooks), mounts the certificate Secret into the
// manager's certificate directory, starts the manager binary and waits for /readyz, the webhooks and the
// leader Lease.
func (c *Cluster) startManager(ctx context.Context) error {
	if c.opts.SkipManager {
		c.log.Info("Manager skipped: not installing webhooks")
		return nil
	}
	if !fileExists(c.opts.ManagerBinary) {
		return fmt.Errorf("manager binary %s is missing: build it with `make build`", c.opts.ManagerBinary)
	}
	if err := c.createManagerIdentity(ctx); err != nil {
		return err
	}
	kubeconfigPath, err := c.writeManagerKubeconfig(ctx)
	if err != nil {
		return err
	}
	var ports [3]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return err
		}
	}
	c.WebhookPort = ports[0]
	c.MetricsAddr = "127.0.0.1:" + strconv.Itoa(ports[1])
	c.ProbeAddr = "127.0.0.1:" + strconv.Itoa(ports[2])
	if err := c.installWebhooks(ctx); err != nil {
		return err
	}
	certDir := c.webhookCertDir(Manager)
	if err := c.MountSecret(ctx, ManagerNamespace, WebhookSecret, certDir); err != nil {
		return err
	}
	c.managerArgs = []string{
		"--kubeconfig=" + kubeconfigPath,
		"--namespace=" + ManagerNamespace,
		"--leader-elect=true",
		"--webhook-host=127.0.0.1",
		"--webhook-port=" + strconv.Itoa(c.WebhookPort),
		"--webhook-cert-dir=" + certDir,
		"--cert-mode=self",
		"--metrics-bind-address=" + c.MetricsAddr,
		"--health-probe-bind-address=" + c.ProbeAddr,
	}
	c.managerArgs = append(c.managerArgs, c.opts.ManagerArgs...)
	c.managerEnv = childEnv()
	if c.manager, err = c.run(Manager, c.opts.ManagerBinary, c.managerArgs, c.managerEnv); err != nil {
		return err
	}
	if err := c.waitManagerServing(ctx); err != nil {
		return err
	}
	return c.waitLeaderLease(ctx, " (log: "+c.ManagerLog()+")")
}

// webhookCertDir is the certificate directory of the manager process name, where WebhookSecret is mounted.
func (c *Cluster) webhookCertDir(name string) string {
	return filepath.Join(c.Dir, "webhook-certs", name)
}

// waitManagerServing waits until the manager answers /readyz and the API server reaches its webhooks.
func (c *Cluster) waitManagerServing(ctx context.Context) error {
	logHint := " (log: " + c.ManagerLog() + ")"
	if err := c.poll(ctx, "the manager's /readyz"+logHint, httpOK("http://"+c.ProbeAddr+"/readyz")); err != nil {
		return err
	}
	return c.waitWebhooks(ctx, logHint)
}

// createManagerIdentity creates drover-system, the ServiceAccount, and binds it to every Role and
// ClusterRole in Options.RBACFiles.
func (c *Cluster) createManagerIdentity(ctx context.Context) error {
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ManagerNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ManagerServiceAccount, Namespace: ManagerNamespace}},
	}
	roles, err := readRoles(c.opts.RBACFiles)
	if err != nil {
		return err
	}
	if len(roles) == 0 {
		c.log.Info("No RBAC roles found for the manager: it runs without permissions", "files", c.opts.RBACFiles)
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: ManagerServiceAccount, Namespace: ManagerNamespace}
	for _, role := range roles {
		objs = append(objs, role)
		ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: role.GetKind(), Name: role.GetName()}
		meta := metav1.ObjectMeta{Name: ManagerServiceAccount + ":" + role.GetName(), Namespace: role.GetNamespace()}
		if role.GetKind() == "ClusterRole" {
			objs = append(objs, &rbacv1.ClusterRoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: []rbacv1.Subject{subject}})
		} else {
			objs = append(objs, &rbacv1.RoleBinding{ObjectMeta: meta, RoleRef: ref, Subjects: []rbacv1.Subject{subject}})
		}
	}
	for _, o := range objs {
		if err := c.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}

// readRoles returns the Roles (namespace defaulting to drover-system) and ClusterRoles in files; other
// kinds are ignored. A missing file is skipped.
func readRoles(files []string) ([]*unstructured.Unstructured, error) {
	return readManifests(files, func(o *unstructured.Unstructured) (bool, error) {
		if o.GetAPIVersion() != "rbac.authorization.k8s.io/v1" {
			return false, nil
		}
		switch o.GetKind() {
		case "ClusterRole":
			o.SetNamespace("")
		case "Role":
			if o.GetNamespace() == "" {
				o.SetNamespace(ManagerNamespace)
			}
		default:
			return false, nil
		}
		return true, nil
	})
}

// readManifests decodes the objects of files (a missing file is skipped) and returns those keep accepts;
// keep may change the object it accepts.
func readManifests(files []string, keep func(*unstructured.Unstructured) (bool, error)) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(filepath.Clean(f))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		objs, err := DecodeYAML(data)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		for _, o := range objs {
			ok, err := keep(o)
			if err != nil {
				return nil, fmt.Errorf("%s: %s %s: %w", f, o.GetKind(), o.GetName(), err)
			}
			if ok {
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// DecodeYAML splits a multi-document YAML (or JSON) stream into objects, skipping empty documents and
// expanding Lists.
func DecodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.IsList() {
			list, err := u.ToList()
			if err != nil {
				return nil, err
			}
			for i := range list.Items {
				objs = append(objs, &list.Items[i])
			}
			continue
		}
		objs = append(objs, u)
	}
}

// writeManagerKubeconfig requests a ServiceAccount token and writes <Dir>/manager.kubeconfig.
func (c *Cluster) writeManagerKubeconfig(ctx context.Context) (string, error) {
	path := filepath.Join(c.Dir, "manager.kubeconfig")
	cfg, err := c.ServiceAccountKubeconfig(ctx, ManagerNamespace, ManagerServiceAccount, path)
	if err != nil {
		return "", err
	}
	c.ManagerConfig = cfg
	return path, nil
}

// ServiceAccountKubeconfig requests a token for the ServiceAccount namespace/name, writes a kubeconfig with
// it to path, and returns the matching client configuration: how a process here authenticates as a pod of
// that ServiceAccount would.
func (c *Cluster) ServiceAccountKubeconfig(ctx context.Context, namespace, name, path string) (*rest.Config, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	ttl := int64(managerTokenTTL.Seconds())
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &ttl}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for system:serviceaccount:%s:%s: %w", namespace, name, err)
	}
	data, err := kubeconfig(c.Config, name, clientcmdapi.AuthInfo{Token: tr.Status.Token})
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(path, data); err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            c.Config.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData},
		BearerToken:     tr.Status.Token,
	}, nil
}

// waitWebhooks waits until the API server reaches the manager's webhooks: a server-side dry-run create of
// a NodePool in v1beta1 passes through the conversion webhook and the NodePool webhooks (and fails while they
// are unreachable).
func (c *Cluster) waitWebhooks(ctx context.Context, logHint string) error {
	if c.webhooks == 0 {
		return nil
	}
	if !c.served(nodePoolGVK) {
		c.log.Info("NodePool is not served: not probing the webhooks")
		return nil
	}
	probe := nodePoolObject(Pool{Name: "drover-local-webhook-probe", Type: "Edge"})
	probe.SetAPIVersion("apps.openyurt.io/v1beta1")
	return c.poll(ctx, "the webhooks to answer"+logHint, func(ctx context.Context) (bool, error) {
		err := c.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err == nil, err
	})
}

// waitLeaderLease waits until the manager holds its leader-election Lease, i.e. its controllers run.
func (c *Cluster) waitLeaderLease(ctx context.Context, logHint string) error {
	if c.opts.ManagerLease == "-" || slices.Contains(c.opts.ManagerArgs, "--leader-elect=false") {
		return nil
	}
	key := client.ObjectKey{Namespace: ManagerNamespace, Name: c.opts.ManagerLease}
	return c.poll(ctx, "the manager to hold the Lease "+key.String()+logHint, func(ctx context.Context) (bool, error) {
		var lease coordinationv1.Lease
		if err := c.Client.Get(ctx, key, &lease); err != nil {
			return false, err
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
	})
}

// served reports whether the API server serves gvk.
func (c *Cluster) served(gvk schema.GroupVersionKind) bool {
	_, err := c.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil || !meta.IsNoMatchError(err)
}

// startNodes creates the NodePools and the fake nodes and waits until every node is Ready.
func (c *Cluster) startNodes(ctx context.Context) error {
	if c.served(nodePoolGVK) {
		if err := createNodePools(ctx, c.Client); err != nil {
			return err
		}
	} else {
		c.log.Info("NodePool is not served: creating the nodes without their pools")
	}
	if err := createNodes(ctx, c.Client, len(c.Nodes)); err != nil {
		return err
	}
	err := c.poll(ctx, fmt.Sprintf("%d nodes to be Ready (kwok log: %s)", len(c.Nodes), c.LogPath(Kwok)),
		func(ctx context.Context) (bool, error) {
			var nodes corev1.NodeList
			if err := c.Client.List(ctx, &nodes); err != nil {
				return false, err
			}
			ready := 0
			for i := range nodes.Items {
				if NodeReady(&nodes.Items[i]) {
					ready++
				}
			}
			return ready >= len(c.Nodes), nil
		})
	if err != nil || c.opts.SkipManager || !c.served(nodePoolGVK) {
		return err
	}
	// Ready means the manager has caught up too: every pool counts its Ready nodes.
	return c.poll(ctx, fmt.Sprintf("the NodePools to count their Ready nodes (manager log: %s)", c.ManagerLog()),
		func(ctx context.Context) (bool, error) { return nodePoolsCounted(ctx, c.Client), nil })
}
