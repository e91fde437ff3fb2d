package certs

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// conversionCAInterval is how often the conversion injector looks at its CRDs: a CRD applied again without
// the CA (a migration's step) converts again within it.
const conversionCAInterval = 10 * time.Second

// conversionInjector keeps the manager's CA in the conversion webhook of the CRDs it converts (self mode).
// Unlike the admission webhook configurations, which are the installation's own, a converted CRD may change
// hands while the manager runs: a migration applies OpenKruise's or OpenYurt's CRD again, whose conversion
// webhook calls that project's Service. So the check that the CRD's conversion webhook calls the manager's
// Service is made before every write, not once at start: a CRD calling another Service, or with no conversion
// webhook, is left alone (and logged when it becomes so), and one that is not installed is skipped.
type conversionInjector struct {
	names              []string
	namespace, service string
	caFile             string
	reader             client.Reader
	writer             client.Writer
	ready              <-chan struct{}
	log                logr.Logger
	interval           time.Duration
	// foreign remembers the CRDs last seen calling another Service, so that each change is logged once.
	foreign map[string]string
}

func newConversionInjector(names []string, o Options, reader client.Reader, writer client.Writer, ready <-chan struct{},
	log logr.Logger) *conversionInjector {
	return &conversionInjector{names: names, namespace: o.Namespace, service: o.ServiceName,
		caFile: filepath.Join(o.CertDir, caCertFile), reader: reader, writer: writer, ready: ready,
		log: log.WithName("conversion"), interval: conversionCAInterval, foreign: map[string]string{}}
}

// NeedLeaderElection is false: every replica serves the conversion webhook; the writes are idempotent.
func (c *conversionInjector) NeedLeaderElection() bool { return false }

// Start injects once the certificate is mounted, then every interval, until ctx ends. A failed pass is logged
// and retried at the next.
func (c *conversionInjector) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-c.ready:
	}
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		if err := c.pass(ctx); err != nil {
			c.log.Error(err, "Keeping the CA in the converted CRDs failed; retrying", "in", c.interval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// pass writes the current CA into each CRD that needs it.
func (c *conversionInjector) pass(ctx context.Context) error {
	ca, err := os.ReadFile(c.caFile)
	if err != nil {
		return fmt.Errorf("reading the CA: %w", err)
	}
	for _, name := range c.names {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		switch err := c.reader.Get(ctx, client.ObjectKey{Name: name}, crd); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return fmt.Errorf("reading CRD %s: %w", name, err)
		}
		update, calls := withConversionCA(crd, c.namespace+"/"+c.service, ca)
		if calls != c.namespace+"/"+c.service {
			if c.foreign[name] != calls {
				c.log.Info("Not injecting the CA into a CRD whose conversion webhook is not the manager's", "crd", name,
					"conversionService", calls, "want", c.namespace+"/"+c.service)
				c.foreign[name] = calls
			}
			continue
		}
		delete(c.foreign, name)
		if !update {
			continue
		}
		// An update of what was just read (the manager may update CRDs, not patch them): a concurrent change
		// makes it a conflict, retried at the next pass on the new object.
		if err := c.writer.Update(ctx, crd, client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("writing the CA into CRD %s: %w", name, err)
		}
		c.log.Info("Wrote the CA into the conversion webhook of a CRD", "crd", name)
	}
	return nil
}

// withConversionCA sets ca as the caBundle of crd's conversion webhook and reports whether it changed: not
// when the CRD has it already, nor when its webhook does not call want (<namespace>/<service>). It also returns
// what the webhook calls.
func withConversionCA(crd *unstructured.Unstructured, want string, ca []byte) (bool, string) {
	calls := conversionService(crd)
	if calls != want {
		return false, calls
	}
	path := []string{"spec", "conversion", "webhook", "clientConfig", "caBundle"}
	current, _, _ := unstructured.NestedString(crd.Object, path...)
	if decoded, err := base64.StdEncoding.DecodeString(current); err == nil && bytes.Equal(decoded, ca) {
		return false, calls
	}
	return unstructured.SetNestedField(crd.Object, base64.StdEncoding.EncodeToString(ca), path...) == nil, calls
}
