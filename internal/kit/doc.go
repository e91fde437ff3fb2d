// Package kit is drover's controller kit: the mechanisms every controller's reconcile pass shares, written
// once.
//
// A pass reads like a table of contents: get the object, observe from the cache, plan (pure), execute the
// writes with an Executor, derive the status from what it observed and did, write it with WriteStatus (no
// write when nothing changed), emit the buffered Events after that write, and turn the Outcome of the pass
// into its ctrl.Result with a Backoff.
//
// Controller describes a controller to the manager's registry: its name, the kinds it needs served, its
// flags, indexes, metrics, setup and webhooks. Adding a controller is one package exporting a Controller and
// one line in the registry.
package kit
