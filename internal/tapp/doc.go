// Package tapp holds the TApp controller of drover (apps.tkestack.io/v1; user guide: docs/tapp.md).
//
// The decisions are made by the pure core, package core: status derivation, planning, budgets, hashing, pod
// construction, in-place merging and completion detection, deterministic in their arguments (time is
// passed in) and without API access. This package is the thin sequence of reads, writes and expectation
// bookkeeping around it: reconciler.go (Reconcile, its outcome), spec_io.go (selector persistence and
// template pruning), observe_io.go (the owned pods, their release and adoption, the observation),
// execute.go (the pod writes), pvc_io.go (PVC retention), expectations.go (writes the cache has not shown
// yet), handlers.go and index.go (watches and field indexes), events.go, metrics.go and setup.go. Writes run
// on the shared kit (internal/kit): bounded, creates in slow start.
//
// # Data flow of one reconcile pass
//
//  1. Prepare. pass := core.NewPass(app, core.Options{DeletePodAfterAppFinish: flag}) applies the webhook
//     defaults in memory, resolves and hashes every template once and partitions [0, replicas) into
//     desired-running and completed ids from the previous status. Spec-level problems are in pass.Issues.
//     If Settings.SelectorDerived, persist Settings.Selector once; autoDeleteUnusedTemplate prunes unused
//     templatePool entries (syncSpec; a pass that patched the spec ends there). If Settings.Blocked, no pod
//     write may happen (the plan contains none); the status is still written.
//
//  2. Observe. List the pods controlled by the TApp (owner-UID index); claimPods releases those that no
//     longer match the selector and adopts orphans (core.ShouldRelease, core.CanAdopt: the step's writes).
//     observe then only reads: core.ClassifyPods gives the well-formed pods by id, the malformed ones and
//     the ids whose name a malformed pod occupies; pending expectations replace what the cache does not
//     show yet; names held by pods of other owners go into NameTaken; the nodes of terminating pods decide
//     force deletion. The result is a core.Observation.
//
//  3. Plan. plan := pass.Plan(obs) applies the action table (first matching row wins) to every id with a
//     pod and every desired-running id, budgets the Update/Recreate candidates (force path then rolling
//     path, ascending ids; updating an unavailable pod costs nothing) and decides gate writes. plan.Issues
//     feed ReplicaFailure and events.
//
//  4. Execute, in this order, recording expectations and building the post-action view (the observed pods
//     with every successful write applied):
//     - plan.GateWrites(): status patch of the gate condition; when it completes an in-place update, an
//     InPlaceUpdateCompleted event and the duration metric.
//     - plan.Deletes(): graceful deletes, and deletes with grace 0 of terminating pods on lost nodes, all
//     with a UID precondition.
//     - plan.Creates(): the PVCs of the instance (a PVC being deleted waits, one of another owner fails the
//     id), then the pod, then its gate True; in slow-start batches.
//     - plan.Updates(): re-stamps and metadata-only patches; in-place updates write the gate False, then
//     patch the pod computed from the object that write returned (guarded by its resourceVersion).
//     - PVC retention: the TApp ownerReference of in-range PVCs follows whenDeleted; under whenScaled:
//     Delete the PVCs of removed ids go once no pod of their name exists.
//     Failed writes become issues with FailedCreate, FailedDelete or FailedUpdate.
//
//  5. Status. pass.Status(view, issues) derives the whole status; it is written (an update of the status
//     subresource) only if it differs from the stored one. Events are emitted after the write; to keep a
//     pass that changes nothing free of writes, the Warnings of plan issues go out only when the
//     ReplicaFailure condition changes. The pass requeues for minReadySeconds waits, PVCs being deleted,
//     expectation expiry and lost races (kit.Outcome, kit.Backoff).
package tapp
