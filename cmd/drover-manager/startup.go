package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/sets"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/drover-dev/drover/internal/certs"
	"github.com/drover-dev/drover/internal/kit"
	"github.com/drover-dev/drover/internal/registry"
	"github.com/drover-dev/drover/internal/version"
)

// startup runs the manager in order. With webhooks, the certificate comes first: certs.Setup is added before
// the manager starts, and the controllers, their indexes and their webhooks (registry.Setup) are set up on
// the running manager only once the certificate is in place, because the webhook server cannot start
// without it. Until then /readyz fails and says what it waits for; the manager's cache starts no informer
// before the controllers ask for one. Without webhooks the controllers are set up before the manager starts.
type startup struct {
	mgr           manager.Manager
	log           logr.Logger
	controllers   []*kit.Controller
	enabled       sets.Set[string]
	webhooks      bool
	certs         certs.Options
	webhookServer ctrlwebhook.Server

	// setup sets the controllers and webhooks up once the certificate is in place (registry.Setup when nil).
	setup      func(ctx context.Context) ([]string, error)
	certsReady <-chan struct{}
	setUp      atomic.Bool

	reasonMu   sync.Mutex
	lastReason string // the last reason /readyz failed for, logged once
}

// run starts the manager and returns when it stops: at the end of signals, on a failure of the manager, or on
// a failed set-up of the controllers, whose error it returns.
func (s *startup) run(signals context.Context) error {
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(signals, s.log))
	defer cancel()
	if err := s.mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if !s.webhooks {
		started, err := registry.Setup(ctx, s.mgr, s.controllers, s.enabled, false)
		if err != nil {
			return err
		}
		if err := s.mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
			return fmt.Errorf("adding ready check: %w", err)
		}
		s.log.Info("Starting manager", "version", version.Get().String(), "controllers", started, "webhooks", false)
		if err := s.mgr.Start(ctx); err != nil {
			return fmt.Errorf("running manager: %w", err)
		}
		return nil
	}

	ready, err := certs.Setup(ctx, s.mgr, s.certs)
	if err != nil {
		return fmt.Errorf("setting up the webhook certificate: %w", err)
	}
	s.certsReady = ready
	if err := s.mgr.AddReadyzCheck("readyz", s.readyz(s.webhookServer.StartedChecker())); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}
	setupErr := make(chan error, 1)
	go func() { setupErr <- s.setupWhenReady(ctx, cancel) }()
	s.log.Info("Starting manager; the controllers and webhooks start once the webhook certificate is in place",
		"version", version.Get().String(), "certMode", s.certs.Mode, "webhooks", true)
	startErr := s.mgr.Start(ctx)
	cancel()
	var errs []error
	// A set-up cut short by a signal (adding to a manager that is stopping fails) is no error.
	if err := <-setupErr; err != nil && signals.Err() == nil {
		errs = append(errs, fmt.Errorf("setting up the controllers and webhooks: %w", err))
	}
	if startErr != nil {
		errs = append(errs, fmt.Errorf("running manager: %w", startErr))
	}
	return errors.Join(errs...)
}

// setupWhenReady waits for the certificate, then sets the controllers and webhooks up on the running
// manager. On failure it cancels the manager's context and returns the error.
func (s *startup) setupWhenReady(ctx context.Context, cancel context.CancelFunc) error {
	select {
	case <-s.certsReady:
	case <-ctx.Done():
		return nil
	}
	setup := s.setup
	if setup == nil {
		setup = func(ctx context.Context) ([]string, error) {
			return registry.Setup(ctx, s.mgr, s.controllers, s.enabled, true)
		}
	}
	started, err := setup(ctx)
	if err != nil {
		cancel()
		return err
	}
	s.setUp.Store(true)
	s.log.Info("Webhook certificate in place: controllers and webhooks set up", "controllers", started)
	return nil
}

// readyz fails until the certificate is in place and the controllers and webhooks are set up, then follows
// the webhook server's own check. The HTTP answer withholds the reason; the log says it, once per reason.
func (s *startup) readyz(webhookStarted healthz.Checker) healthz.Checker {
	return func(req *http.Request) error {
		select {
		case <-s.certsReady:
		default:
			return s.notReady(s.certs.Pending())
		}
		if !s.setUp.Load() {
			return s.notReady("the webhook certificate is in place; setting up the controllers and webhooks")
		}
		if err := webhookStarted(req); err != nil {
			return s.notReady(err.Error())
		}
		return s.notReady("")
	}
}

// notReady returns reason as an error (nil for ""), logging it when it differs from the last one.
func (s *startup) notReady(reason string) error {
	s.reasonMu.Lock()
	changed := reason != s.lastReason
	s.lastReason = reason
	s.reasonMu.Unlock()
	if reason == "" {
		if changed {
			s.log.Info("Ready")
		}
		return nil
	}
	if changed {
		s.log.Info("Not ready", "reason", reason)
	}
	return errors.New(reason)
}
