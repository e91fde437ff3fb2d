package kubestellarsim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/drover-dev/drover/internal/scheme"
)

// startScriptConfigMaps watches the script ConfigMaps with a cache of their own (restricted to the script
// label, so it does not narrow the workload ConfigMaps), and replaces the script on every change.
func (s *Sim) startScriptConfigMaps(ctx context.Context, restConfig *rest.Config, wg *sync.WaitGroup) error {
	rc := rest.CopyConfig(restConfig)
	rc.QPS, rc.Burst = s.cfg.QPS, s.cfg.Burst
	c, err := cache.New(rc, cache.Options{
		Scheme:               scheme.New(),
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{ScriptConfigMapLabel: "true"}),
		DefaultTransform:     cache.TransformStripManagedFields(),
	})
	if err != nil {
		return fmt.Errorf("building the script ConfigMap cache: %w", err)
	}
	informer, err := c.GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		return fmt.Errorf("watching script ConfigMaps: %w", err)
	}
	reload := func(client.Object) { s.reloadScript(ctx, c) }
	h := handler{add: reload, update: func(_, n client.Object) { reload(n) }, del: reload}
	if _, err := informer.AddEventHandler(h.funcs()); err != nil {
		return fmt.Errorf("handling script ConfigMap events: %w", err)
	}
	wg.Go(func() {
		if err := c.Start(ctx); err != nil {
			s.log.Error(err, "Script ConfigMap cache stopped")
		}
	})
	if !c.WaitForCacheSync(ctx) {
		return errors.New("the script ConfigMap cache did not sync")
	}
	s.reloadScript(ctx, c)
	return nil
}

// reloadScript reads every script ConfigMap, in namespace/name order, and replaces the script. A ConfigMap
// that does not parse is skipped with a log line.
func (s *Sim) reloadScript(ctx context.Context, c client.Reader) {
	var list corev1.ConfigMapList
	if err := c.List(ctx, &list); err != nil {
		s.log.Error(err, "Listing script ConfigMaps")
		return
	}
	slices.SortFunc(list.Items, func(a, b corev1.ConfigMap) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var entries []ScriptEntry
	for i := range list.Items {
		cm := &list.Items[i]
		data, ok := cm.Data[ScriptConfigMapKey]
		if !ok {
			s.log.Info("Script ConfigMap has no script", "configMap", klog.KObj(cm), "key", ScriptConfigMapKey)
			continue
		}
		parsed, err := ParseScript([]byte(data))
		if err != nil {
			s.log.Error(err, "Skipping a script ConfigMap", "configMap", klog.KObj(cm))
			continue
		}
		entries = append(entries, parsed...)
	}
	if err := s.ReplaceScript(entries); err != nil {
		s.log.Error(err, "Replacing the script")
		return
	}
	s.log.V(1).Info("Loaded the script", "configMaps", len(list.Items), "entries", len(entries))
}
