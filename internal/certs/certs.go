package certs

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Mode says who provides the webhook serving certificate.
type Mode string

const (
	// ModeSelf: the manager creates and rotates its certificate in the Secret and injects the CA.
	ModeSelf Mode = "self"
	// ModeExternal: cert-manager or the user provides the mounted certificate and injects the CA.
	ModeExternal Mode = "external"
)

// Names and defaults.
const (
	// DefaultSecretName is the Secret holding the certificate, in the manager's namespace.
	DefaultSecretName = "drover-webhook-server-cert" //nolint:gosec // G101: a Secret's name, not a credential
	// DefaultServiceName is the Service in front of the webhook server, in the manager's namespace.
	DefaultServiceName = "drover-webhook-service"
	// ConfigurationPrefix starts the installed name of every webhook configuration: kustomize's namePrefix
	// and the chart add it to the names hack/registrygen generates (<controller>-mutating, ...).
	ConfigurationPrefix = "drover-"
	// CAName and Organization are the subject of the CA the manager creates.
	CAName       = "drover-ca"
	Organization = "drover"
	// FieldOwner is the field manager of the manager's writes to the Secret and the caBundles.
	FieldOwner = "drover-manager"
)

// The files of the certificate directory, named as the keys of the Secret.
const (
	caCertFile = "ca.crt"
	caKeyFile  = "ca.key"
	certFile   = "tls.crt"
	keyFile    = "tls.key"
)

// ParseMode returns the Mode named s.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case ModeSelf, ModeExternal:
		return m, nil
	}
	return "", fmt.Errorf("unknown certificate mode %q: want %s or %s", s, ModeSelf, ModeExternal)
}

// DefaultCertDir is where controller-runtime's webhook server reads tls.crt and tls.key when no directory is
// given.
func DefaultCertDir() string {
	return filepath.Join(os.TempDir(), "k8s-webhook-server", "serving-certs")
}

// Options configure Setup.
type Options struct {
	Mode Mode
	// Namespace is the manager's namespace: of the Secret and of the Service.
	Namespace string
	// SecretName is the Secret holding ca.crt, ca.key, tls.crt and tls.key (self mode).
	SecretName string
	// ServiceName is the Service in front of the webhook server; the certificate is for DNSName.
	ServiceName string
	// ExtraDNSNames are further names of the certificate (self mode).
	ExtraDNSNames []string
	// CertDir is the webhook server's certificate directory, where the Secret is mounted.
	CertDir string
	// Webhooks are the webhook configurations whose caBundle the manager keeps (self mode): see Webhooks.
	Webhooks []rotator.WebhookInfo
	// Conversions are the CRDs whose conversion caBundle the manager keeps while they call its Service (self
	// mode): kit.ConvertedCRDs, kept by conversionInjector.
	Conversions []string
}

// DNSName is the name the API server checks the certificate against: <service>.<namespace>.svc.
func (o Options) DNSName() string { return o.ServiceName + "." + o.Namespace + ".svc" }

// Validate reports the first option that is missing or wrong.
func (o Options) Validate() error {
	if _, err := ParseMode(string(o.Mode)); err != nil {
		return err
	}
	switch {
	case o.Namespace == "":
		return errors.New("the manager's namespace is empty")
	case o.ServiceName == "":
		return errors.New("the webhook Service name is empty")
	case o.CertDir == "":
		return errors.New("the webhook certificate directory is empty")
	case o.Mode == ModeSelf && o.SecretName == "":
		return errors.New("the certificate Secret name is empty")
	}
	for _, n := range o.ExtraDNSNames {
		if strings.TrimSpace(n) == "" || strings.ContainsAny(n, " ,/") {
			return fmt.Errorf("extra DNS name %q is not a host name", n)
		}
	}
	return nil
}

// Pending says what readiness waits for until the channel Setup returned is closed.
func (o Options) Pending() string {
	if o.Mode == ModeExternal {
		return fmt.Sprintf("waiting for the webhook serving certificate (--cert-mode=external): tls.crt and tls.key in %s, valid for %s, "+
			"provided by cert-manager or the installation", o.CertDir, o.DNSName())
	}
	return fmt.Sprintf("waiting for the webhook serving certificate (--cert-mode=self): the manager creates it in Secret %s/%s, "+
		"waits until it is mounted in %s and injects its CA into the webhook configurations", o.Namespace, o.SecretName, o.CertDir)
}

// Setup adds to mgr, before it starts, what puts the webhook serving certificate in place, and returns a
// channel closed once it is: mounted in CertDir and, in self mode, its CA injected. In self mode it first
// creates the Secret when it is missing (the rotator fails at start without it), seeded with what CertDir
// holds.
func Setup(ctx context.Context, mgr manager.Manager, o Options) (<-chan struct{}, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	log := ctrl.LoggerFrom(ctx).WithName("certs")
	ready := make(chan struct{})
	if o.Mode == ModeExternal {
		log.Info("Webhook certificate provided externally: waiting for it", "dir", o.CertDir, "dnsName", o.DNSName())
		return ready, mgr.Add(&fileWaiter{dir: o.CertDir, dnsName: o.DNSName(), ready: ready, log: log})
	}
	key := types.NamespacedName{Namespace: o.Namespace, Name: o.SecretName}
	if err := ensureSecret(ctx, mgr.GetAPIReader(), mgr.GetClient(), key, o.CertDir, log); err != nil {
		return nil, fmt.Errorf("creating the webhook certificate Secret %s: %w", key, err)
	}
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      key,
		CertDir:        o.CertDir,
		CAName:         CAName,
		CAOrganization: Organization,
		DNSName:        o.DNSName(),
		ExtraDNSNames:  o.ExtraDNSNames,
		IsReady:        ready,
		Webhooks:       o.Webhooks,
		FieldOwner:     FieldOwner,
		ExtKeyUsages:   &[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// Every replica serves webhooks and must become ready, not only the leader.
		RequireLeaderElection: false,
		EnableReadinessCheck:  true,
	})
	if err != nil {
		return nil, fmt.Errorf("adding the certificate rotator: %w", err)
	}
	k, err := newKeeper(mgr, key, o.CertDir, log)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(k); err != nil {
		return nil, fmt.Errorf("adding the certificate Secret keeper: %w", err)
	}
	if len(o.Conversions) > 0 {
		if err := mgr.Add(newConversionInjector(o.Conversions, o, mgr.GetAPIReader(), mgr.GetClient(), ready, log)); err != nil {
			return nil, fmt.Errorf("adding the conversion CA injector: %w", err)
		}
	}
	log.Info("Webhook certificate managed by the manager", "secret", key, "dir", o.CertDir, "dnsName", o.DNSName(),
		"webhooks", len(o.Webhooks), "conversions", len(o.Conversions))
	return ready, nil
}
