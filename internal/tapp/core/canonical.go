package core

import (
	corev1 "k8s.io/api/core/v1"
)

// Values the apiserver fills into an absent pod field (k8s.io/kubernetes pkg/apis/core/v1/defaults.go, not
// imported by this module). canonicalPodSpec clears a field holding its default, so that a template written
// with the defaults spelled out (e.g. copied from `kubectl get -o yaml` of a workload) hashes like the same
// template without them.
const (
	defaultTerminationGracePeriod = int64(30)
	defaultSchedulerName          = "default-scheduler"
	defaultTerminationMessagePath = "/dev/termination-log"
	defaultProbeTimeout           = int32(1)
	defaultProbePeriod            = int32(10)
	defaultProbeSuccessThreshold  = int32(1)
	defaultProbeFailureThreshold  = int32(3)
	defaultVolumeMode             = int32(0o644)
	defaultTokenExpirationSeconds = int64(3600)
	defaultFieldRefAPIVersion     = "v1"
	defaultHTTPGetPath            = "/"
)

// canonicalPodSpec returns a deep copy of spec with every field that holds its apiserver default cleared.
// Semantically equal specs (one defaulted, one not) therefore serialise alike.
func canonicalPodSpec(spec *corev1.PodSpec) *corev1.PodSpec {
	s := spec.DeepCopy()
	if s.RestartPolicy == corev1.RestartPolicyAlways {
		s.RestartPolicy = ""
	}
	if s.DNSPolicy == corev1.DNSClusterFirst {
		s.DNSPolicy = ""
	}
	if s.SchedulerName == defaultSchedulerName {
		s.SchedulerName = ""
	}
	if ptrIs(s.TerminationGracePeriodSeconds, defaultTerminationGracePeriod) {
		s.TerminationGracePeriodSeconds = nil
	}
	if ptrIs(s.EnableServiceLinks, true) {
		s.EnableServiceLinks = nil
	}
	if s.Resources != nil {
		canonicalResources(s.Resources)
	}
	for i := range s.InitContainers {
		canonicalContainer(&s.InitContainers[i], s.HostNetwork)
	}
	for i := range s.Containers {
		canonicalContainer(&s.Containers[i], s.HostNetwork)
	}
	for i := range s.Volumes {
		canonicalVolume(&s.Volumes[i])
	}
	return s
}

func ptrIs[T comparable](p *T, v T) bool {
	return p != nil && *p == v
}

func canonicalContainer(c *corev1.Container, hostNetwork bool) {
	if c.TerminationMessagePath == defaultTerminationMessagePath {
		c.TerminationMessagePath = ""
	}
	if c.TerminationMessagePolicy == corev1.TerminationMessageReadFile {
		c.TerminationMessagePolicy = ""
	}
	if c.ImagePullPolicy != "" && c.ImagePullPolicy == defaultPullPolicy(c.Image) {
		c.ImagePullPolicy = ""
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		if p.Protocol == corev1.ProtocolTCP {
			p.Protocol = ""
		}
		if hostNetwork && p.HostPort == p.ContainerPort {
			p.HostPort = 0
		}
	}
	for i := range c.Env {
		if c.Env[i].ValueFrom != nil {
			canonicalFieldRef(c.Env[i].ValueFrom.FieldRef)
		}
	}
	canonicalResources(&c.Resources)
	canonicalProbe(c.LivenessProbe)
	canonicalProbe(c.ReadinessProbe)
	canonicalProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		canonicalHandler(c.Lifecycle.PostStart)
		canonicalHandler(c.Lifecycle.PreStop)
	}
}

// defaultPullPolicy is the apiserver's default imagePullPolicy for an image: Always for the tag "latest"
// (explicit or implied by a reference without tag and digest), IfNotPresent otherwise (also for references
// it cannot parse).
func defaultPullPolicy(image string) corev1.PullPolicy {
	ref, ok := parseImage(image)
	if ok && (ref.tag == "latest" || (ref.tag == "" && ref.digest == "")) {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// canonicalResources drops requests equal to the limit of the same resource: the apiserver copies limits
// into absent requests.
func canonicalResources(r *corev1.ResourceRequirements) {
	for name, req := range r.Requests {
		if limit, ok := r.Limits[name]; ok && limit.Cmp(req) == 0 {
			delete(r.Requests, name)
		}
	}
}

func canonicalProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == defaultProbeTimeout {
		p.TimeoutSeconds = 0
	}
	if p.PeriodSeconds == defaultProbePeriod {
		p.PeriodSeconds = 0
	}
	if p.SuccessThreshold == defaultProbeSuccessThreshold {
		p.SuccessThreshold = 0
	}
	if p.FailureThreshold == defaultProbeFailureThreshold {
		p.FailureThreshold = 0
	}
	canonicalHTTPGet(p.HTTPGet)
	if p.GRPC != nil && ptrIs(p.GRPC.Service, "") {
		p.GRPC.Service = nil
	}
}

func canonicalHandler(h *corev1.LifecycleHandler) {
	if h != nil {
		canonicalHTTPGet(h.HTTPGet)
	}
}

func canonicalHTTPGet(g *corev1.HTTPGetAction) {
	if g == nil {
		return
	}
	if g.Path == defaultHTTPGetPath {
		g.Path = ""
	}
	if g.Scheme == corev1.URISchemeHTTP {
		g.Scheme = ""
	}
}

func canonicalFieldRef(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == defaultFieldRefAPIVersion {
		f.APIVersion = ""
	}
}

func canonicalVolume(v *corev1.Volume) {
	src := &v.VolumeSource
	if src.EmptyDir != nil && src.EmptyDir.Medium == "" && src.EmptyDir.SizeLimit == nil {
		// An empty emptyDir is also what the apiserver puts into a volume without source.
		src.EmptyDir = nil
	}
	if src.Secret != nil && ptrIs(src.Secret.DefaultMode, defaultVolumeMode) {
		src.Secret.DefaultMode = nil
	}
	if src.ConfigMap != nil && ptrIs(src.ConfigMap.DefaultMode, defaultVolumeMode) {
		src.ConfigMap.DefaultMode = nil
	}
	if src.DownwardAPI != nil {
		if ptrIs(src.DownwardAPI.DefaultMode, defaultVolumeMode) {
			src.DownwardAPI.DefaultMode = nil
		}
		canonicalDownwardItems(src.DownwardAPI.Items)
	}
	if src.HostPath != nil && ptrIs(src.HostPath.Type, corev1.HostPathUnset) {
		src.HostPath.Type = nil
	}
	if src.Projected != nil {
		canonicalProjected(src.Projected)
	}
	if src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil {
		spec := &src.Ephemeral.VolumeClaimTemplate.Spec
		if ptrIs(spec.VolumeMode, corev1.PersistentVolumeFilesystem) {
			spec.VolumeMode = nil
		}
	}
}

func canonicalProjected(p *corev1.ProjectedVolumeSource) {
	if ptrIs(p.DefaultMode, defaultVolumeMode) {
		p.DefaultMode = nil
	}
	for i := range p.Sources {
		s := &p.Sources[i]
		if s.DownwardAPI != nil {
			canonicalDownwardItems(s.DownwardAPI.Items)
		}
		if s.ServiceAccountToken != nil && ptrIs(s.ServiceAccountToken.ExpirationSeconds, defaultTokenExpirationSeconds) {
			s.ServiceAccountToken.ExpirationSeconds = nil
		}
	}
}

func canonicalDownwardItems(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		canonicalFieldRef(items[i].FieldRef)
	}
}
