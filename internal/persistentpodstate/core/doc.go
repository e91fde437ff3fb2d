// Package core is the pure core of the PersistentPodState controller: what a pass decides, without reading or
// writing the API. The controller gathers the facts (the object as cached, what it learned of the target, the
// target's pods, a node-label lookup and the in-life annotation changes it observed) and calls Compute, which
// returns the new status.podStates; Guard then keeps the object within the size etcd accepts.
//
// # Identities and ordinals
//
// A pod name is an identity: pods created again under the same name are the same identity, whatever their
// UID. The ordinal of a name is the integer after its last '-'. The target's valid ordinals are the first
// `replicas` integers from the first ordinal that are not reserved (an Advanced StatefulSet may reserve
// some); Ordinals answers membership in O(1) and is built once per pass.
//
// # Inputs are shared
//
// The PersistentPodState and the pods come from an informer cache shared with other goroutines. Nothing in
// this package modifies them: entries that change are copied, and entries that do not change share their
// maps with the input, so the result must be treated as read-only too.
package core
