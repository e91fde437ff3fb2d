package certs

import (
	"context"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/drover-dev/drover/internal/testutil"
)

const testDNSName = "drover-webhook-service.drover-system.svc"

// writeCerts writes a CA and a serving certificate for dnsName, valid from begin to end, into dir, as the
// rotator writes them into the Secret.
func writeCerts(t *testing.T, dir, dnsName string, begin, end time.Time) {
	t.Helper()
	r := &rotator.CertRotator{CAName: CAName, CAOrganization: Organization, DNSName: dnsName,
		ExtKeyUsages: &[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	ca, err := r.CreateCACert(begin, end)
	if err != nil {
		t.Fatal(err)
	}
	cert, key, err := r.CreateCertPEM(ca, begin, end)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{caCertFile: ca.CertPEM, caKeyFile: ca.KeyPEM, certFile: cert, keyFile: key}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCheckServingCert(t *testing.T) {
	now := time.Now()
	valid := t.TempDir()
	writeCerts(t, valid, testDNSName, now.Add(-time.Hour), now.Add(time.Hour))
	if err := CheckServingCert(valid, testDNSName, now); err != nil {
		t.Errorf("a valid certificate: %v", err)
	}
	for what, tc := range map[string]struct {
		dir  func() string
		name string
		at   time.Time
		want string
	}{
		"another name":   {dir: func() string { return valid }, name: "other.drover-system.svc", at: now, want: "not valid for other.drover-system.svc"},
		"expired":        {dir: func() string { return valid }, name: testDNSName, at: now.Add(2 * time.Hour), want: "valid from"},
		"not yet valid":  {dir: func() string { return valid }, name: testDNSName, at: now.Add(-2 * time.Hour), want: "valid from"},
		"nothing there":  {dir: t.TempDir, name: testDNSName, at: now, want: "no such file"},
		"mismatched key": {dir: func() string { return mismatched(t, now) }, name: testDNSName, at: now, want: "private key does not match"},
	} {
		err := CheckServingCert(tc.dir(), tc.name, tc.at)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: CheckServingCert = %v, want an error containing %q", what, err, tc.want)
		}
	}
}

// mismatched returns a directory whose tls.key belongs to another certificate.
func mismatched(t *testing.T, now time.Time) string {
	a, b := t.TempDir(), t.TempDir()
	writeCerts(t, a, testDNSName, now.Add(-time.Hour), now.Add(time.Hour))
	writeCerts(t, b, testDNSName, now.Add(-time.Hour), now.Add(time.Hour))
	key, err := os.ReadFile(filepath.Join(b, keyFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a, keyFile), key, 0o600); err != nil {
		t.Fatal(err)
	}
	return a
}

func TestFileWaiterClosesOnceTheCertificateIsThere(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := &fileWaiter{dir: dir, dnsName: testDNSName, ready: make(chan struct{}), log: logr.Discard()}
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	select {
	case <-w.ready:
		t.Fatal("ready before any certificate was mounted")
	case <-time.After(2 * externalPoll):
	}
	writeCerts(t, dir, testDNSName, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	select {
	case <-w.ready:
	case <-ctx.Done():
		t.Fatal("not ready after the certificate was mounted")
	}
	if err := <-done; err != nil {
		t.Errorf("Start = %v", err)
	}
}

func TestEnsureSecret(t *testing.T) {
	key := types.NamespacedName{Namespace: "drover-system", Name: DefaultSecretName}
	ctx := context.Background()

	t.Run("seeded with the mounted files", func(t *testing.T) {
		dir := t.TempDir()
		writeCerts(t, dir, testDNSName, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
		fc := testutil.NewFakeClient(testutil.FakeClientOptions{})
		if err := ensureSecret(ctx, fc.Client, fc.Client, key, dir, logr.Discard()); err != nil {
			t.Fatal(err)
		}
		var got corev1.Secret
		if err := fc.Inner.Get(ctx, key, &got); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{caCertFile, caKeyFile, certFile, keyFile} {
			want, _ := os.ReadFile(filepath.Join(dir, name))
			if !cmp.Equal(got.Data[name], want) {
				t.Errorf("Secret key %s differs from the mounted file", name)
			}
		}
	})

	t.Run("empty when nothing is mounted", func(t *testing.T) {
		fc := testutil.NewFakeClient(testutil.FakeClientOptions{})
		if err := ensureSecret(ctx, fc.Client, fc.Client, key, filepath.Join(t.TempDir(), "missing"), logr.Discard()); err != nil {
			t.Fatal(err)
		}
		var got corev1.Secret
		if err := fc.Inner.Get(ctx, key, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Data) != 0 || got.Type != corev1.SecretTypeOpaque {
			t.Errorf("Secret = type %s, keys %d; want an empty Opaque Secret", got.Type, len(got.Data))
		}
	})
}

func TestEnsureSecretExisting(t *testing.T) {
	key := types.NamespacedName{Namespace: "drover-system", Name: DefaultSecretName}
	ctx := context.Background()

	t.Run("left alone when it exists", func(t *testing.T) {
		existing := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
			Data: map[string][]byte{"tls.crt": []byte("x")}}
		fc := testutil.NewFakeClient(testutil.FakeClientOptions{Objects: []client.Object{existing}})
		if err := ensureSecret(ctx, fc.Client, fc.Client, key, t.TempDir(), logr.Discard()); err != nil {
			t.Fatal(err)
		}
		if n := fc.Writes.Get("total"); n != 0 {
			t.Errorf("%d writes to an existing Secret, want none", n)
		}
	})

	t.Run("created meanwhile by another replica", func(t *testing.T) {
		fc := testutil.NewFakeClient(testutil.FakeClientOptions{Hooks: interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewAlreadyExists(schema.GroupResource{Resource: "secrets"}, key.Name)
			}}})
		if err := ensureSecret(ctx, fc.Client, fc.Client, key, t.TempDir(), logr.Discard()); err != nil {
			t.Errorf("ensureSecret = %v, want nil", err)
		}
		if n := fc.Writes.Get("create Secret"); n != 1 {
			t.Errorf("%d creates, want 1", n)
		}
	})

	t.Run("a refused create is an error", func(t *testing.T) {
		refused := errors.New("forbidden")
		fc := testutil.NewFakeClient(testutil.FakeClientOptions{Hooks: interceptor.Funcs{
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error { return refused }}})
		if err := ensureSecret(ctx, fc.Client, fc.Client, key, t.TempDir(), logr.Discard()); !errors.Is(err, refused) {
			t.Errorf("ensureSecret = %v, want %v", err, refused)
		}
	})
}

func TestOptions(t *testing.T) {
	o := Options{Mode: ModeSelf, Namespace: "ns", SecretName: "s", ServiceName: "svc", CertDir: "/d", ExtraDNSNames: []string{"localhost"}}
	if err := o.Validate(); err != nil {
		t.Errorf("Validate = %v", err)
	}
	if got := o.DNSName(); got != "svc.ns.svc" {
		t.Errorf("DNSName = %s", got)
	}
	for what, change := range map[string]func(*Options){
		"mode":      func(o *Options) { o.Mode = "cert-manager" },
		"namespace": func(o *Options) { o.Namespace = "" },
		"service":   func(o *Options) { o.ServiceName = "" },
		"dir":       func(o *Options) { o.CertDir = "" },
		"secret":    func(o *Options) { o.SecretName = "" },
		"dns name":  func(o *Options) { o.ExtraDNSNames = []string{"a b"} },
	} {
		bad := o
		change(&bad)
		if bad.Validate() == nil {
			t.Errorf("Validate accepted a wrong %s", what)
		}
	}
	external := o
	external.Mode, external.SecretName = ModeExternal, ""
	if err := external.Validate(); err != nil {
		t.Errorf("external mode needs no Secret name: %v", err)
	}
	if _, err := ParseMode("self "); err != nil {
		t.Errorf("ParseMode(self) = %v", err)
	}
	if _, err := ParseMode("manual"); err == nil {
		t.Error("ParseMode accepted manual")
	}
}
