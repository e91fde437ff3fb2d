// Package preview describes what drover would do to the objects another controller left in a cluster, before
// drover runs: the objects it adopts, those it changes (and how), and those it leaves alone. Each API's
// package computes its Reports with its own planning code, read-only; kubectl-drover prints them. The
// migration guides (docs/migrate/) run it before the switch.
package preview

import (
	"fmt"
	"io"
	"strings"
)

// Effect is what drover's first passes do to one object.
type Effect string

const (
	// Keep: nothing is written.
	Keep Effect = "keep"
	// Adopt: drover becomes the object's controller (an owner reference); nothing restarts.
	Adopt Effect = "adopt"
	// Relabel: metadata only (labels, annotations); nothing restarts.
	Relabel Effect = "relabel"
	// Status: the object's status only (a record added, changed or removed); nothing restarts.
	Status Effect = "status"
	// UpdateInPlace: containers restart in place with new images; the pod stays (same name, UID and node).
	UpdateInPlace Effect = "update-in-place"
	// Update: the object's spec changes (a child workload rolls its pods per its own strategy).
	Update Effect = "update"
	// Recreate: the pod is deleted and created again (new UID, possibly another node).
	Recreate Effect = "recreate"
	// Create: a missing object is created.
	Create Effect = "create"
	// Delete: the object is deleted.
	Delete Effect = "delete"
)

// Restarts reports whether the effect restarts a container or replaces a pod.
func (e Effect) Restarts() bool {
	return e == UpdateInPlace || e == Update || e == Recreate || e == Delete
}

// Item is one object and what happens to it.
type Item struct {
	// Object names it: "pod web-1", "Deployment edge-hangzhou-x7k2p".
	Object string
	Effect Effect
	// Why says why, with the rendered difference when something changes.
	Why string
}

// Report is what happens to one owner (a TApp, a YurtAppDaemon, ...) and its children.
type Report struct {
	// Owner names it: "TApp default/web".
	Owner string
	// Items lists the owner itself (when it is written) and its children.
	Items []Item
	// Notices are things to know that change no object (a stored value read as upstream read it, ...).
	Notices []string
}

// Restarting lists the items whose effect restarts something.
func (r *Report) Restarting() []Item {
	var out []Item
	for _, it := range r.Items {
		if it.Effect.Restarts() {
			out = append(out, it)
		}
	}
	return out
}

// Write prints reports for people: per owner its items (kept ones only counted unless verbose), notices,
// and a last line with the total of objects that would restart.
func Write(w io.Writer, reports []Report, verbose bool) error {
	var b strings.Builder
	restarting := 0
	for i := range reports {
		r := &reports[i]
		fmt.Fprintf(&b, "%s\n", r.Owner)
		kept := 0
		for _, it := range r.Items {
			if it.Effect == Keep && !verbose {
				kept++
				continue
			}
			if it.Effect.Restarts() {
				restarting++
			}
			fmt.Fprintf(&b, "  %-16s %s: %s\n", it.Effect, it.Object, it.Why)
		}
		if kept > 0 {
			fmt.Fprintf(&b, "  %-16s %d object(s) left as they are\n", Keep, kept)
		}
		for _, n := range r.Notices {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
	}
	if restarting == 0 {
		fmt.Fprintf(&b, "%d owner(s): nothing restarts.\n", len(reports))
	} else {
		fmt.Fprintf(&b, "%d owner(s): %d object(s) restart or roll (update-in-place, update, recreate, delete).\n", len(reports), restarting)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
