// Package stager is the pure core of the StagedBindingPolicy controller: one pass of a rollout as a function
// of the policy (spec, status, annotations), what the pass observed of KubeStellar (BindingPolicies,
// Bindings, CombinedStatuses) and the time, returning the status to commit, the events of the pass and the
// BindingPolicy writes to make. It does no I/O; the controller package reads, writes and emits.
//
// The rules it applies are those of docs/design/stagedbindingpolicy.md:
//
//   - No rollout state lives anywhere but in the status and the live objects, so a pass after a restart or a
//     failover continues where the last committed status left off.
//   - A stage transition is committed by a status write before any BindingPolicy write it leads to
//     (Decision.Commit); the BindingPolicy writes of a pass derive from the status it commits.
//   - BindingPolicies are handed over create-before-delete: a BindingPolicy no longer desired is deleted only
//     once every desired one is current (it exists, KubeStellar has processed its generation and made its
//     Binding), so the workload is never left unplaced.
//   - Only a current BindingPolicy's CombinedStatuses of the recorded incarnation count for the gates.
//   - Errors never pass a gate, and never silently: they set the GateError condition and raise an event.
package stager
