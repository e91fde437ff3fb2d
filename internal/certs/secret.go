package certs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Retry delays of the keeper when it cannot create the Secret (RBAC, API server unreachable).
const (
	retryMin = time.Second
	retryMax = 30 * time.Second
)

// ensureSecret creates the Secret key, seeded with the files mounted in dir, unless reader finds it.
func ensureSecret(ctx context.Context, reader client.Reader, writer client.Writer, key types.NamespacedName, dir string,
	log logr.Logger) error {
	err := reader.Get(ctx, key, &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	data, err := mountedData(dir)
	if err != nil {
		return err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
	if err := writer.Create(ctx, s, client.FieldOwner(FieldOwner)); err != nil {
		if apierrors.IsAlreadyExists(err) { // another replica was first
			return nil
		}
		return err
	}
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	log.Info("Created the missing webhook certificate Secret, seeded with the mounted files", "secret", key,
		"dir", dir, "keys", keys)
	return nil
}

// mountedData reads the certificate files present in dir, by Secret key; a missing file is left out.
func mountedData(dir string) (map[string][]byte, error) {
	data := map[string][]byte{}
	for _, name := range []string{caCertFile, caKeyFile, certFile, keyFile} {
		b, err := os.ReadFile(filepath.Clean(filepath.Join(dir, name)))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the mounted certificate: %w", err)
		}
		data[name] = b
	}
	return data, nil
}

// keeper creates the certificate Secret again whenever it is deleted, on every replica. It watches that one
// Secret through a cache of its own, restricted by name, so it adds no watch beyond it.
type keeper struct {
	key    types.NamespacedName
	dir    string
	cache  cache.Cache
	writer client.Writer
	log    logr.Logger
	wake   chan struct{}
}

func newKeeper(mgr manager.Manager, key types.NamespacedName, dir string, log logr.Logger) (*keeper, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:            mgr.GetScheme(),
		Mapper:            mgr.GetRESTMapper(),
		DefaultNamespaces: map[string]cache.Config{key.Namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Field: fields.OneTermEqualSelector("metadata.name", key.Name)},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cache of the certificate Secret: %w", err)
	}
	return &keeper{key: key, dir: dir, cache: c, writer: mgr.GetClient(), log: log, wake: make(chan struct{}, 1)}, nil
}

// NeedLeaderElection is false: every replica keeps the Secret, so a follower alone recovers it too.
func (k *keeper) NeedLeaderElection() bool { return false }

func (k *keeper) poke() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// Start watches the Secret and creates it again after each deletion, until ctx ends.
func (k *keeper) Start(ctx context.Context) error {
	inf, err := k.cache.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("watching the certificate Secret: %w", err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(any) { k.poke() }}); err != nil {
		return fmt.Errorf("watching the certificate Secret: %w", err)
	}
	cacheErr := make(chan error, 1)
	go func() { cacheErr <- k.cache.Start(ctx) }()
	if !k.cache.WaitForCacheSync(ctx) {
		select {
		case err := <-cacheErr:
			return fmt.Errorf("watching the certificate Secret: %w", err)
		default:
			return nil // stopping
		}
	}
	k.poke() // it may have gone before the watch began
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-k.wake:
			k.recreate(ctx)
		}
	}
}

// recreate creates the Secret when the cache misses it, retrying with a growing delay until it exists or ctx
// ends.
func (k *keeper) recreate(ctx context.Context) {
	delay := retryMin
	for {
		err := ensureSecret(ctx, k.cache, k.writer, k.key, k.dir, k.log)
		if err == nil {
			return
		}
		k.log.Error(err, "Cannot create the webhook certificate Secret again; retrying", "secret", k.key, "in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, retryMax)
	}
}
