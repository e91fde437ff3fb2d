// Package sbpcel holds the CEL environments of StagedBindingPolicy: it compiles a stage's filter,
// condition and failureCondition expressions and evaluates them against a workload object's Binding
// entry and KubeStellar CombinedStatus.
//
// # Environments
//
// Both environments extend the Kubernetes CEL base environment (k8s.io/apiserver/pkg/cel/environment at
// its default compatibility version: the Kubernetes libraries for strings, lists, sets, regular
// expressions, URLs, quantities, IPs and CIDRs, semver and format, optional types, two-variable
// comprehensions, and the Kubernetes runtime cost accounting). Their variables are declared with types,
// as CRD validation rules declare self, so an expression that names an undeclared variable or an unknown
// field, or compares a string with a number, fails to compile.
//
// The filter environment (kind Filter) has:
//
//   - downsyncClause: the object's workload entry in the Binding: group (the API group, "" for core,
//     never the version), version, resource, namespace ("" for a cluster-scoped object), name and
//     resourceVersion strings, createOnly and wantSingletonReportedState bools, statusCollectors
//     list(string);
//   - stage: name string, index int.
//
// The gate environment (kinds Condition and FailureCondition) adds:
//
//   - combinedStatus: the CombinedStatus as stored: metadata{name, namespace, uid, generation, labels,
//     annotations} and results, a list of {name, columnNames, rows[].columns[], rowErrors[]{wec{clusterId},
//     columnName, error}, aggregationErrors[]{columnName, error}}, each column {type, string, float,
//     bool, object, array}. A Number's value is a string in float ("2", "2.5", "1e+21", "+Inf", "NaN"),
//     so col.float == '1' is a string comparison and col.float == 1 does not compile; object and array
//     are dyn. A field KubeStellar left out is absent: reading it fails with "no such key" at run time,
//     so guard it with has() or read it with ?. (optional access);
//   - obj: the same value as combinedStatus (the name the KubeStellar workload stager's README uses);
//   - results: map(string, list(map(string, dyn))): each collector's rows keyed by column name. Numbers
//     are parsed to double (Go ParseFloat syntax, so "+Inf", "-Inf", "NaN" and exponents work), strings,
//     bools and nulls kept, Object and Array values are the JSON they hold with every number a double. A
//     collector without an entry in the CombinedStatus has no key; columns beyond the column names are
//     ignored and missing ones absent. A Number that does not parse fails every expression reading
//     results with ReasonInvalidNumber;
//   - resultErrors: map(string, list(map(string, string))): each collector's row errors
//     {cluster, column, error} followed by its aggregation errors (cluster ""); every collector with an
//     entry has a key;
//   - destinations: the cluster ids of the Binding's destinations, sorted.
//
// An expression's type must be bool, or dyn (checked when it runs: anything but a bool is
// ReasonNonBoolResult). One evaluation may cost at most CostLimit (the Kubernetes per-call limit);
// Program.EstimatedCost gives the checker's worst-case estimate for advice only.
//
// # Caching
//
// A Cache keeps compiled programs and compile errors in a bounded LRU keyed by kind, EnvironmentVersion
// and expression text, and reports each hit or miss to Options.OnCompile. Programs are safe for
// concurrent use.
//
// Values derived from a CombinedStatus are built only for programs that reference them (found from the
// checked expression's references) and kept, per UID and resourceVersion, in a second bounded LRU shared
// by the Cache's programs: the CEL view of the object (a lazy, copy-free wrapper of the unstructured
// content), results and resultErrors. Evaluations against a CombinedStatus are remembered there too,
// keyed by the program and a hash of the other inputs it references, so a pass over unchanged
// CombinedStatuses costs a lookup per object. The caller passes the unstructured content from its
// informer cache and must not modify it.
//
// Remembering matters because the runtime cost accounting of cel-go v0.26 makes a comprehension over n
// elements take time quadratic in n: an expression that visits each of 1,000 rows takes milliseconds,
// one that looks up a few values microseconds.
package sbpcel
