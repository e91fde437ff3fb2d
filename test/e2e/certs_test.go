package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	openyurtv1beta1 "github.com/drover-dev/drover/api/openyurt/apps/v1beta1"
	"github.com/drover-dev/drover/internal/localcluster"
)

// The manager keeps its own webhook serving certificate (--cert-mode=self): the local cluster installs the webhook
// configurations without a caBundle and an empty Secret, and the API server reaches the webhooks through the
// Service drover-webhook-service, checking the certificate against the CA the manager injected.
var _ = Describe("The webhook certificate", func() {
	secretKey := client.ObjectKey{Namespace: localcluster.ManagerNamespace, Name: localcluster.WebhookSecret}

	It("is created again with the same CA and certificate when its Secret is deleted, and admission keeps working", func() {
		var before corev1.Secret
		Expect(k8sClient.Get(suiteCtx, secretKey, &before)).To(Succeed())
		Expect(before.Data).To(HaveKey("ca.crt"), "the manager filled the Secret it was given empty")
		Expect(before.Data).To(HaveKey("tls.crt"))
		Expect(admit()).To(Succeed())

		probe := startAdmissionProbe()
		Expect(k8sClient.Delete(suiteCtx, &before)).To(Succeed())
		Eventually(func(g Gomega) {
			var after corev1.Secret
			g.Expect(k8sClient.Get(suiteCtx, secretKey, &after)).To(Succeed())
			g.Expect(after.UID).NotTo(Equal(before.UID), "a new Secret")
			g.Expect(after.Data["ca.crt"]).To(Equal(before.Data["ca.crt"]), "the CA the webhook configurations trust")
			g.Expect(after.Data["tls.crt"]).To(Equal(before.Data["tls.crt"]), "the certificate being served")
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		Consistently(admit).WithTimeout(3 * time.Second).WithPolling(interval).Should(Succeed())
		ok, failures := probe.stop()
		Expect(failures).To(BeEmpty(), "admission while the Secret was gone and after")
		Expect(ok).To(BeNumerically(">=", 5), "the probe ran throughout")
		for _, name := range []string{"drover-nodepool-mutating", "drover-tapp-validating"} {
			Expect(caBundles(name)).To(HaveEach(Equal(before.Data["ca.crt"])), name)
		}
	})

	It("restores a cleared caBundle, and admission works", func() {
		const name = "drover-nodepool-validating"
		var secret corev1.Secret
		Expect(k8sClient.Get(suiteCtx, secretKey, &secret)).To(Succeed())
		Expect(caBundles(name)).To(HaveEach(Equal(secret.Data["ca.crt"])))
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var cfg admissionregistrationv1.ValidatingWebhookConfiguration
			if err := k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, &cfg); err != nil {
				return err
			}
			for i := range cfg.Webhooks {
				cfg.Webhooks[i].ClientConfig.CABundle = nil
			}
			return k8sClient.Update(suiteCtx, &cfg)
		})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(caBundles(name)).To(HaveEach(Equal(secret.Data["ca.crt"])))
			g.Expect(admit()).To(Succeed())
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		Consistently(admit).WithTimeout(2 * time.Second).WithPolling(interval).Should(Succeed())
	})

	It("serves a certificate provided by someone else with --cert-mode=external, and writes neither Secret nor caBundle", func() {
		var before corev1.Secret
		Expect(k8sClient.Get(suiteCtx, secretKey, &before)).To(Succeed())
		bundles := caBundles("drover-tapp-mutating")
		// The extra manager's certificate directory holds the Secret, as mounted by a kubelet: it plays the part
		// of a certificate provided from outside. It returns once /readyz passes.
		m, err := cluster.StartExtraManager(suiteCtx, "drover-manager-external", "--cert-mode=external")
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { Expect(m.Stop(30 * time.Second)).To(Succeed()) })
		Eventually(func() (string, error) { return grepFile(m.LogPath, "Webhook serving certificate in place") }).
			WithTimeout(timeout).WithPolling(interval).ShouldNot(BeEmpty())
		log, err := grepFile(m.LogPath, "cert-rotation")
		Expect(err).NotTo(HaveOccurred())
		Expect(log).To(BeEmpty(), "no rotator runs in external mode")
		var after corev1.Secret
		Expect(k8sClient.Get(suiteCtx, secretKey, &after)).To(Succeed())
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "the Secret is not written")
		Expect(caBundles("drover-tapp-mutating")).To(Equal(bundles))
	})
})

// The CRDs drover converts call the manager's Service with the CA it injected, and a NodePool written in one
// version reads back in the others through it.
var _ = Describe("The conversion webhook", func() {
	It("has its CA in the converted CRDs, writes it again when cleared, and converts NodePools between v1alpha1, v1beta1 and v1beta2", func() {
		var secret corev1.Secret
		Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Namespace: localcluster.ManagerNamespace, Name: localcluster.WebhookSecret},
			&secret)).To(Succeed())
		for _, name := range []string{"nodepools.apps.openyurt.io", "persistentpodstates.apps.kruise.io"} {
			Eventually(func(g Gomega) {
				crd := &unstructured.Unstructured{}
				crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
				g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, crd)).To(Succeed())
				strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
				g.Expect(strategy).To(Equal("Webhook"), name)
				service, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service", "name")
				g.Expect(service).To(Equal("drover-webhook-service"), name)
				bundle, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
				g.Expect(base64.StdEncoding.DecodeString(bundle)).To(Equal(secret.Data["ca.crt"]), name)
			}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		}

		By("clearing the NodePool CRD's caBundle: the manager writes it again")
		Eventually(func(g Gomega) {
			crd := &unstructured.Unstructured{}
			crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
			g.Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: "nodepools.apps.openyurt.io"}, crd)).To(Succeed())
			unstructured.RemoveNestedField(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
			g.Expect(k8sClient.Update(suiteCtx, crd)).To(Succeed())
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

		pool := &openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "e2e-conversion"},
			Spec: openyurtv1beta1.NodePoolSpec{Type: openyurtv1beta1.Cloud}}
		// A v1beta1 create is converted to the stored v1beta2: it succeeds once the CA is back (at most 10 s).
		Eventually(func() error { return k8sClient.Create(suiteCtx, pool) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(suiteCtx, pool))).To(Succeed()) })
		// With the Webhook strategy the API server cannot serve another version than the stored one (v1beta2)
		// without the manager's answer.
		for _, version := range []string{"v1alpha1", "v1beta1", "v1beta2"} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(openyurtv1beta1.GroupVersion.WithKind("NodePool"))
			u.SetAPIVersion("apps.openyurt.io/" + version)
			Eventually(func() error { return k8sClient.Get(suiteCtx, client.ObjectKeyFromObject(pool), u) }).
				WithTimeout(timeout).WithPolling(interval).Should(Succeed(), version)
			Expect(u.GetAPIVersion()).To(Equal("apps.openyurt.io/"+version), "the API server converted the NodePool")
			got, _, _ := unstructured.NestedString(u.Object, "spec", "type")
			Expect(got).To(Equal("Cloud"), version)
		}
	})
})

// grepFile returns the lines of file containing s, joined.
func grepFile(file, s string) (string, error) {
	data, err := os.ReadFile(filepath.Clean(file))
	if err != nil {
		return "", err
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n"), nil
}

// admit sends a server-side dry-run create of a NodePool through drover's NodePool webhooks, and checks the
// defaulting webhook answered (it labels the pool with its type).
func admit() error {
	pool := &openyurtv1beta1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "e2e-certs-probe"},
		Spec: openyurtv1beta1.NodePoolSpec{Type: openyurtv1beta1.Edge}}
	ctx, cancel := context.WithTimeout(suiteCtx, 15*time.Second)
	defer cancel()
	if err := k8sClient.Create(ctx, pool, client.DryRunAll); err != nil {
		return err
	}
	if _, ok := pool.Labels[openyurtv1beta1.LabelNodePoolType]; !ok {
		return fmt.Errorf("the NodePool was admitted without drover's defaulting: labels %v", pool.Labels)
	}
	return nil
}

// caBundles returns the caBundle of every webhook of the configuration name (mutating or validating).
func caBundles(name string) [][]byte {
	GinkgoHelper()
	var out [][]byte
	var m admissionregistrationv1.MutatingWebhookConfiguration
	if err := k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, &m); err == nil {
		for _, w := range m.Webhooks {
			out = append(out, w.ClientConfig.CABundle)
		}
		return out
	}
	var v admissionregistrationv1.ValidatingWebhookConfiguration
	Expect(k8sClient.Get(suiteCtx, client.ObjectKey{Name: name}, &v)).To(Succeed())
	for _, w := range v.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	Expect(out).NotTo(BeEmpty(), "configuration %s has webhooks", name)
	return out
}

// admissionProbe calls admit in a loop, in the background, and records each failure.
type admissionProbe struct {
	stopped chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	ok      int
	failed  []string
}

func startAdmissionProbe() *admissionProbe {
	p := &admissionProbe{stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(p.done)
		for {
			err := admit()
			p.mu.Lock()
			if err != nil {
				p.failed = append(p.failed, time.Now().Format(time.StampMilli)+": "+err.Error())
			} else {
				p.ok++
			}
			p.mu.Unlock()
			select {
			case <-p.stopped:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return p
}

// stop ends the probe and returns how many calls were admitted and the failures.
func (p *admissionProbe) stop() (int, []string) {
	close(p.stopped)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ok, p.failed
}
