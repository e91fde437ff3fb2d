package localcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The managers run as processes, not pods, so this package plays the kubelet's part for their certificate:
// it copies the keys of a Secret into a directory (one file per key, each written atomically) as soon as the
// Secret changes, the way a Secret volume is kept up to date. As with a kubelet, a deleted Secret leaves the
// files as they are.

// secretMount is one Secret copied into directories.
type secretMount struct {
	key types.NamespacedName

	mu   sync.Mutex
	dirs []string
	data map[string][]byte // what was last copied; nil before the Secret was seen
}

// MountSecret copies the Secret namespace/name into dir now (if it exists) and again whenever its data
// changes, until the cluster stops. Several directories may mount one Secret.
func (c *Cluster) MountSecret(ctx context.Context, namespace, name, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	key := types.NamespacedName{Namespace: namespace, Name: name}
	c.mountsMu.Lock()
	m, ok := c.mounts[key]
	if !ok {
		m = &secretMount{key: key}
		c.mounts[key] = m
	}
	c.mountsMu.Unlock()
	if !ok {
		if err := c.watchSecret(ctx, m); err != nil {
			c.mountsMu.Lock()
			delete(c.mounts, key)
			c.mountsMu.Unlock()
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !slices.Contains(m.dirs, dir) {
		m.dirs = append(m.dirs, dir)
	}
	if m.data != nil {
		return m.write(dir, m.data, nil)
	}
	return nil
}

// watchSecret starts a watch of that one Secret, for the cluster's lifetime, and waits until it has synced.
func (c *Cluster) watchSecret(ctx context.Context, m *secretMount) error {
	ca, err := cache.New(c.Config, cache.Options{
		Scheme:            c.scheme,
		DefaultNamespaces: map[string]cache.Config{m.key.Namespace: {}},
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Field: fields.OneTermEqualSelector("metadata.name", m.key.Name)},
		},
	})
	if err != nil {
		return err
	}
	inf, err := ca.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return err
	}
	update := func(obj any) {
		if s, ok := obj.(*corev1.Secret); ok {
			if err := m.update(s.Data); err != nil {
				c.log.Error(err, "Copying a Secret into its directories", "secret", m.key)
			}
		}
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, obj any) { update(obj) },
	})
	if err != nil {
		return err
	}
	go func() {
		if err := ca.Start(c.lifetime); err != nil {
			c.log.Error(err, "Watching a mounted Secret", "secret", m.key)
		}
	}()
	if !ca.WaitForCacheSync(ctx) {
		return fmt.Errorf("watching Secret %s: %w", m.key, ctx.Err())
	}
	return nil
}

// update copies data into every directory when it differs from what was copied last.
func (m *secretMount) update(data map[string][]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data != nil && maps.EqualFunc(m.data, data, slices.Equal) {
		return nil
	}
	old := m.data
	m.data = maps.Clone(data)
	if m.data == nil {
		m.data = map[string][]byte{}
	}
	var errs []error
	for _, dir := range m.dirs {
		errs = append(errs, m.write(dir, m.data, old))
	}
	return errors.Join(errs...)
}

// write writes data into dir, one file per key, tls.crt last (its presence means the pair is there), and
// removes the files of the keys of old that data no longer has.
func (m *secretMount) write(dir string, data, old map[string][]byte) error {
	keys := slices.Sorted(maps.Keys(data))
	if i := slices.Index(keys, "tls.crt"); i >= 0 {
		keys = append(slices.Delete(keys, i, i+1), "tls.crt")
	}
	for _, k := range keys {
		if err := writeFileAtomic(filepath.Join(dir, k), data[k]); err != nil {
			return err
		}
	}
	for k := range old {
		if _, ok := data[k]; !ok {
			if err := os.Remove(filepath.Join(dir, k)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return nil
}
