package registry

// Permissions the manager itself needs, whatever controllers run:
//   - leader election: the Lease in the manager's namespace, and the core events it records there;
//   - secure metrics (--metrics-secure): authentication and authorization of scrapers;
//   - the webhook serving certificate (internal/certs, --cert-mode=self): its Secret in the manager's namespace
//     (created again when deleted, rotated), and the caBundle of the webhook configurations and of the CRDs
//     whose conversion webhook the manager serves.
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=drover-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=drover-system,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups="",namespace=drover-system,resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;update
