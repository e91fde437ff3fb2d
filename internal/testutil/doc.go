// Package testutil holds small fluent builders for test fixtures, shared by unit, integration and e2e tests:
//
//	pool := testutil.MakeNodePool("east").Labels(map[string]string{"region": "east"}).Obj()
//	node := testutil.MakeNode("n1").Pool("east").Ready(true).Obj()
//
// Each builder works on its own object; Obj returns a deep copy, so a builder can be reused after Obj.
package testutil
