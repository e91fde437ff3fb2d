// Package core is the pure core of the TApp controller: what a pass of package tapp decides, without
// reading or writing the API. NewPass prepares a TApp (defaults applied in memory, templates resolved and
// hashed, desired sets); ClassifyPods sorts the observed pods; Pass.Plan turns an Observation into the
// actions of the pass; Pass.Status derives the status from the post-action view. Time is passed in, so
// every function is deterministic in its arguments.
//
// # Hashing
//
// The template hash and the uniq hash serialise canonically: Kubernetes JSON, null/{}/[] dropped, sorted
// keys, FNV-1a 64, "v1-<16 hex>". Fields holding their apiserver default value are cleared first
// (canonical.go), so a template with defaults spelled out hashes like the same template without them. List
// elements that become empty are kept as {} so list positions keep their meaning.
package core
