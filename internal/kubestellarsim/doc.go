// Package kubestellarsim is a stand-in for the parts of KubeStellar that drover observes, for tests and the
// local cluster, where KubeStellar itself cannot run. It runs against one API server, which plays both the
// inventory space (OCM ManagedCluster objects, read unstructured) and the workload description space
// (BindingPolicies, workload objects, Bindings, StatusCollectors, CombinedStatuses).
//
// What it does, as KubeStellar v0.30 does:
//
//   - For every BindingPolicy it adds the finalizer bindingpolicy.kubestellar.io/kscontroller and maintains the
//     Binding of the same name: the destinations are the ManagedClusters whose labels match any cluster
//     selector, the workload is every watched object that passes at least one downsync clause, each with the
//     modulation merged over the clauses it passes. Every watched kind counts: a clause on a Deployment's
//     label also selects the ReplicaSets and Pods carrying it. It then sets the StatusCollectorsAvailable
//     condition on the Binding (whose observedGeneration stays 0), and observedGeneration and the Binding's
//     conditions on the policy. Deleting a policy deletes its CombinedStatuses before the finalizer goes; its
//     Binding is left to the garbage collector, through the owner reference.
//   - For every object of a Binding with at least one status collector it maintains one CombinedStatus, named
//     "<object UID>.<policy UID>", evaluating the collectors' CEL for every destination of the Binding.
//
// KubeStellar moves objects to clusters and brings their status back; here nothing moves. The status a
// destination "returned" for an object is scripted: in process with SetReturnedStatus and friends, from
// ConfigMaps labelled kssim.drover.dev/script=true (see ScriptConfigMapKey), or computed by Config.AutoStatus.
// A destination with no returned status has not reported, and is evaluated as KubeStellar evaluates it: as a
// blank report, whose returned.status is empty, so COUNT counts it and an expression reading
// returned.status.<field> fails for it (a rowErrors entry, no row). A returned status of a built-in kind
// lacks the top-level fields its type omits when zero: a Deployment with no available replicas has no
// availableReplicas key.
//
// It never writes StagedBindingPolicies or BindingPolicy specs, and has no transport, no singleton reported
// state and no custom transforms.
package kubestellarsim
