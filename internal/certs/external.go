package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
)

// externalPoll is how often the external mode looks at the certificate directory.
const externalPoll = time.Second

// CheckServingCert returns nil when dir holds tls.crt and tls.key forming a key pair whose certificate is valid
// at now for dnsName, and else says what is wrong.
func CheckServingCert(dir, dnsName string, now time.Time) error {
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, certFile), filepath.Join(dir, keyFile))
	if err != nil {
		return fmt.Errorf("loading %s and %s from %s: %w", certFile, keyFile, dir, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Errorf("parsing %s: %w", filepath.Join(dir, certFile), err)
		}
	}
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return fmt.Errorf("the certificate in %s is valid from %s to %s only", filepath.Join(dir, certFile),
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	if err := leaf.VerifyHostname(dnsName); err != nil {
		return fmt.Errorf("the certificate in %s is not valid for %s: %w", filepath.Join(dir, certFile), dnsName, err)
	}
	return nil
}

// fileWaiter closes ready once the certificate directory holds a valid certificate (external mode). It logs
// each different reason to wait once.
type fileWaiter struct {
	dir, dnsName string
	ready        chan struct{}
	log          logr.Logger
}

// NeedLeaderElection is false: every replica waits for its own mounted certificate.
func (w *fileWaiter) NeedLeaderElection() bool { return false }

func (w *fileWaiter) Start(ctx context.Context) error {
	t := time.NewTicker(externalPoll)
	defer t.Stop()
	var last string
	for {
		err := CheckServingCert(w.dir, w.dnsName, time.Now())
		if err == nil {
			w.log.Info("Webhook serving certificate in place", "dir", w.dir, "dnsName", w.dnsName)
			close(w.ready)
			return nil
		}
		if msg := err.Error(); msg != last {
			last = msg
			var invalid x509.HostnameError
			if errors.As(err, &invalid) {
				w.log.Error(err, "The mounted webhook certificate does not fit the webhook Service; waiting for another")
			} else {
				w.log.Info("Waiting for the webhook serving certificate", "reason", msg)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
