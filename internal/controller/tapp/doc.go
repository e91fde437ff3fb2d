// Package tapp holds the TApp controller of drover (apps.tkestack.io/v1, specs/tapp.md).
//
// Most of it is pure logic: status derivation, planning, budgets, hashing, pod construction, in-place merging
// and completion detection. Those functions never read or write the API and are deterministic in their
// arguments (time is passed in). The I/O lives in a few files only, a thin sequence of reads, writes and
// expectation bookkeeping around the pure core: reconciler.go (Reconcile, status write, result),
// observe_io.go (step 2), execute.go (step 4, §6.3), pvc_io.go (§10), spec_io.go (selector persistence and
// template pruning), expectations.go (§14), handlers.go and index.go (watches and field indexes), events.go,
// metrics.go, parallel.go (bounded concurrency, slow start) and setup.go.
//
// # Data flow of one reconcile pass
//
//  1. Prepare. pass := NewPass(app, Options{DeletePodAfterAppFinish: flag}) applies the webhook defaults in
//     memory (Settings: effective defaultTemplateName with the capitalised alias folded, rolling template
//     name, valid budgets, retention, deletePodAfterAppFinish, effective selector), resolves and hashes every
//     template once (Template: Hash, UniqHash, Rolling, MatchesSelector) and partitions [0, replicas) into
//     desired-running and completed ids from the previous status (Desired, §4.1). Spec-level problems are in
//     pass.Issues. If Settings.SelectorDerived, persist Settings.Selector once (§2.2). If Settings.Blocked,
//     no pod write may happen (the plan contains none); the status is still written.
//
//  2. Observe. List the pods controlled by the TApp (owner-UID index), then ClassifyPods(app, pods) gives the
//     well-formed pods by id (Classified.Pods), the malformed ones and the ids whose name a malformed pod
//     occupies. Adoption and release use CanAdopt and ShouldRelease with pass.Selector(). For every id in
//     pass.Missing(pods) look the pod name up in the cache: a pod of another owner there goes into
//     NameTaken. Fill Observation{Pods, Malformed, NameTaken, Expecting (ids with unsatisfied
//     expectations), Nodes (cached nodes of terminating pods; absent = missing from the cache), Now}.
//
//  3. Plan. plan := pass.Plan(obs) applies the action table of §4.2 (first matching row wins) to every id
//     with a pod and every desired-running id, budgets Update/Recreate candidates (§6.2, ScheduleUpdates:
//     force path then rolling path, ascending ids; updating an unavailable pod costs nothing), and decides gate
//     writes (§6.4, DecideGate). Each InstanceAction carries the observed Pod, the resolved Template and,
//     for Create and Update, the Desired pod built by NewPod. plan.Issues feed ReplicaFailure and events.
//
//  4. Execute, in the order of §6.3, recording expectations and building the post-action view (a clone of
//     obs.Pods with every successful write applied). The steps are listed below this list.
//
//  5. Status. status, requeueAfter := pass.Status(view, issues) derives statuses (§4.3, InstanceStatuses),
//     counters (StatusCounts, Summarize), appStatus (§4.4), scaleLabelSelector and the three conditions
//     (§15; transition times kept when unchanged). Write it only if it differs from the stored status;
//     requeue after requeueAfter for minReadySeconds. Emit events after the write; to keep a pass that
//     changes nothing free of writes, emit Warning events for issues only when the ReplicaFailure condition
//     changes.
//
// The execution steps of 4:
//
//   - plan.GateWrites(): status patch of the gate condition (NewGateCondition); view: WithGate. When
//     Gate.Completed, emit InPlaceUpdateCompleted and observe the duration from RecordOf(pod).StartTime.
//   - plan.Deletes(): ActionDelete and ActionRecreate delete gracefully (view: AfterGracefulDelete),
//     ActionForceDelete with grace 0 (view: remove the id). All with a UID precondition.
//   - plan.Creates(): for each claim of DesiredClaims(app, id, &pass.Settings) check the cached PVC with
//     CheckClaim (create Missing ones; Terminating waits; Conflict fails the id), then create a.Desired (slow
//     start) and write the gate True; view: WithGate(AfterCreate(created), True, now).
//   - plan.Updates(): ActionRestamp patches Restamp(a.Pod, a.Template); ActionUpdate with !a.InPlace patches
//     MergePod(a.Pod, a.Desired); both may follow a gate write of step 1, so apply them to the view's
//     current entry. With a.InPlace: write the gate False, then StartInPlaceUpdate(gatedPod, a.Desired, now)
//     and patch that (guarded by gatedPod's resourceVersion); view: the patched pod (gate False, new labels
//     and images).
//   - PVC retention: ClaimOwnerFix for in-range PVCs, ScaledClaimsToDelete for removed ids.
//
// Failed writes become Issues with FailedCreate, FailedDelete or FailedUpdate and are passed to Status.
//
// # Hashing
//
// TemplateHash and UniqHash (§5.2) serialise canonically: Kubernetes JSON, null/{}/[] dropped, sorted keys,
// FNV-1a 64, "v1-<16 hex>". On top of the spec's algorithm, fields holding their apiserver default value are
// cleared first (canonical.go), so a template with defaults spelled out hashes like the same template
// without them. List elements that become empty are kept as {} so list positions keep their meaning.
package tapp
