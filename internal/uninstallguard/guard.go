// Package uninstallguard keeps an uninstall from deleting users' objects.
//
// Removing drover's CRDs deletes every object of their kinds, and through garbage collection the pods,
// PersistentVolumeClaims and bindings those objects own. The Helm chart runs this check as a pre-delete
// hook (`drover-manager uninstall-guard --crds=...`, from the manager's own image): while any object of a
// kind the release installed still exists, the uninstall stops and says which objects hold it. A kind whose
// CRD is not served (never installed, or already gone) has nothing to protect and is skipped.
//
// The check needs only list permission on the kinds: the version of each kind comes from discovery.
package uninstallguard

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// listLimit bounds what one kind's list returns (the rest is counted through the list's remaining-item
// count); the report names the first shown objects of each kind.
const (
	listLimit = 100
	shown     = 5
)

// Found is what remains of one kind.
type Found struct {
	// CRD is the CRD's name, e.g. tapps.apps.tkestack.io.
	CRD string
	// Kind is the kind the CRD serves, e.g. TApp.
	Kind string
	// Count is the number of objects of the kind (at least len(Names)).
	Count int64
	// Names are the first objects found, as namespace/name (name for cluster-scoped kinds).
	Names []string
}

// Report is the result of Check: the kinds that still have objects, in the order of the CRDs given.
type Report struct {
	Found []Found
	// Skipped lists the CRDs that are not served.
	Skipped []string
}

// Blocked reports whether an uninstall must stop.
func (r Report) Blocked() bool { return len(r.Found) > 0 }

// String says what blocks the uninstall and what to do, or that nothing does.
func (r Report) String() string {
	if !r.Blocked() {
		return "no object of drover's kinds exists: the uninstall may remove the CRDs"
	}
	var b strings.Builder
	b.WriteString("refusing to uninstall drover: removing its CRDs would delete these objects " +
		"(and the pods and volumes they own):\n")
	for _, f := range r.Found {
		fmt.Fprintf(&b, "  %s (%s): %d, e.g. %s\n", f.Kind, f.CRD, f.Count, strings.Join(f.Names, ", "))
	}
	b.WriteString("Delete them first, or move them to another controller, then uninstall again. To remove " +
		"drover and every object of its kinds anyway, uninstall with --no-hooks.")
	return b.String()
}

// Check lists, for each CRD name (plural.group), the objects of its kind in every namespace.
func Check(ctx context.Context, c client.Reader, mapper meta.RESTMapper, crds []string) (Report, error) {
	var r Report
	for _, name := range crds {
		plural, group, ok := strings.Cut(name, ".")
		if !ok || plural == "" || group == "" {
			return r, fmt.Errorf("CRD name %q is not <plural>.<group>", name)
		}
		gvk, err := mapper.KindFor(schema.GroupVersionResource{Group: group, Resource: plural})
		if meta.IsNoMatchError(err) {
			r.Skipped = append(r.Skipped, name)
			continue
		}
		if err != nil {
			return r, fmt.Errorf("finding the kind of %s: %w", name, err)
		}
		found, err := list(ctx, c, gvk)
		if err != nil {
			return r, fmt.Errorf("listing %s: %w", name, err)
		}
		if found.Count > 0 {
			found.CRD = name
			r.Found = append(r.Found, found)
		}
	}
	return r, nil
}

func list(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind) (Found, error) {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := c.List(ctx, l, client.Limit(listLimit)); err != nil {
		return Found{}, err
	}
	f := Found{Kind: gvk.Kind, Count: int64(len(l.Items))}
	for i := range l.Items {
		name := l.Items[i].Name
		if ns := l.Items[i].Namespace; ns != "" {
			name = ns + "/" + name
		}
		f.Names = append(f.Names, name)
	}
	sort.Strings(f.Names)
	if len(f.Names) > shown {
		f.Names = f.Names[:shown]
	}
	switch rest := l.GetRemainingItemCount(); {
	case rest != nil:
		f.Count += *rest
	case l.GetContinue() != "":
		// The server did not count what is left: the count is a lower bound.
		f.Names = append(f.Names, "and more")
	}
	return f, nil
}

// ErrBlocked is returned by Run when objects remain.
var ErrBlocked = errors.New("objects of drover's kinds remain")
