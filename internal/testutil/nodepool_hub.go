package testutil

import (
	openyurtv1beta2 "github.com/drover-dev/drover/api/openyurt/apps/v1beta2"
)

// Hub returns the NodePool built so far in v1beta2, the version NodePools are stored in and the NodePool
// controller works on, as the API server's conversion gives it: the v1beta1 fields, and the election fields
// at their defaults.
func (w *NodePoolWrapper) Hub() *openyurtv1beta2.NodePool {
	hub := &openyurtv1beta2.NodePool{}
	if err := w.Obj().ConvertTo(hub); err != nil {
		panic(err) // not expected: the conversion fails only on a wrong type
	}
	return hub
}
