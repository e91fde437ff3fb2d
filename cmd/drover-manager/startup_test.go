package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/drover-dev/drover/internal/certs"
)

func TestReadyzWaitsForCertificateAndSetup(t *testing.T) {
	ready := make(chan struct{})
	s := &startup{log: logr.Discard(), certsReady: ready,
		certs: certs.Options{Mode: certs.ModeSelf, Namespace: "ops", SecretName: "cert", ServiceName: "svc", CertDir: "/certs"}}
	serverErr := errors.New("webhook server has not been started yet")
	check := s.readyz(func(*http.Request) error { return serverErr })
	req, _ := http.NewRequest(http.MethodGet, "/readyz", http.NoBody)

	if err := check(req); err == nil || !strings.Contains(err.Error(), "Secret ops/cert") {
		t.Errorf("before the certificate: %v, want the reason naming the Secret", err)
	}
	close(ready)
	if err := check(req); err == nil || !strings.Contains(err.Error(), "setting up") {
		t.Errorf("before the set-up: %v, want a set-up reason", err)
	}
	s.setUp.Store(true)
	if err := check(req); err == nil || err.Error() != serverErr.Error() {
		t.Errorf("after the set-up: %v, want the webhook server's check", err)
	}
	if err := s.readyz(func(*http.Request) error { return nil })(req); err != nil {
		t.Errorf("all in place: %v", err)
	}
}

func TestSetupWhenReady(t *testing.T) {
	t.Run("a failed set-up cancels the manager and is returned", func(t *testing.T) {
		ready := make(chan struct{})
		close(ready)
		failed := errors.New("index conflict")
		s := &startup{log: logr.Discard(), certsReady: ready,
			setup: func(context.Context) ([]string, error) { return nil, failed }}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := s.setupWhenReady(ctx, cancel); !errors.Is(err, failed) {
			t.Errorf("setupWhenReady = %v, want %v", err, failed)
		}
		if ctx.Err() == nil {
			t.Error("the manager's context was not cancelled")
		}
		if s.setUp.Load() {
			t.Error("marked set up after a failure")
		}
	})
	t.Run("nothing is set up before the certificate", func(t *testing.T) {
		called := false
		s := &startup{log: logr.Discard(), certsReady: make(chan struct{}),
			setup: func(context.Context) ([]string, error) { called = true; return nil, nil }}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := s.setupWhenReady(ctx, cancel); err != nil || called {
			t.Errorf("setupWhenReady = %v, set-up called %v; want nil, not called", err, called)
		}
	})
	t.Run("set up once the certificate is there", func(t *testing.T) {
		ready := make(chan struct{})
		s := &startup{log: logr.Discard(), certsReady: ready,
			setup: func(context.Context) ([]string, error) { return []string{"tapp"}, nil }}
		go close(ready)
		if err := s.setupWhenReady(context.Background(), func() {}); err != nil || !s.setUp.Load() {
			t.Errorf("setupWhenReady = %v, set up %v", err, s.setUp.Load())
		}
	})
}
