package defaults

import (
	corev1 "k8s.io/api/core/v1"
)

const (
	defaultTerminationGracePeriodSeconds = int64(30)
	defaultSchedulerName                 = "default-scheduler"
	defaultTerminationMessagePath        = "/dev/termination-log"
	defaultVolumeMode                    = int32(0o644) // 420
)

// Pod applies core/v1 pod defaults (SetDefaults_Pod and everything below it).
func Pod(pod *corev1.Pod) {
	PodSpec(&pod.Spec)
	if pod.Spec.EnableServiceLinks == nil {
		pod.Spec.EnableServiceLinks = ptrTo(true)
	}
	for i := range pod.Spec.InitContainers {
		copyLimitsToRequests(&pod.Spec.InitContainers[i].Resources)
	}
	for i := range pod.Spec.Containers {
		copyLimitsToRequests(&pod.Spec.Containers[i].Resources)
	}
}

// PodTemplateSpec applies the defaults kube-apiserver gives a pod template
// (the PodSpec defaults, without the Pod-only ones).
func PodTemplateSpec(t *corev1.PodTemplateSpec) {
	PodSpec(&t.Spec)
}

// PodSpec applies core/v1 pod spec defaults (shared by pods and templates).
func PodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DeprecatedServiceAccount == "" && spec.ServiceAccountName != "" {
		spec.DeprecatedServiceAccount = spec.ServiceAccountName
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptrTo(defaultTerminationGracePeriodSeconds)
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = defaultSchedulerName
	}
	for i := range spec.Volumes {
		volume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		container(&spec.InitContainers[i], spec.HostNetwork)
	}
	for i := range spec.Containers {
		container(&spec.Containers[i], spec.HostNetwork)
	}
	for i := range spec.EphemeralContainers {
		ephemeral(&spec.EphemeralContainers[i].EphemeralContainerCommon)
	}
}

// container applies SetDefaults_Container and the defaults of its children.
func container(c *corev1.Container, hostNetwork bool) {
	containerCommon(c)
	for i := range c.Ports {
		if hostNetwork && c.Ports[i].HostPort == 0 {
			c.Ports[i].HostPort = c.Ports[i].ContainerPort
		}
	}
	probe(c.LivenessProbe)
	probe(c.ReadinessProbe)
	probe(c.StartupProbe)
	lifecycle(c.Lifecycle)
}

// ephemeral applies the defaults every kind of container gets.
// EphemeralContainerCommon has exactly Container's fields, so it converts.
func ephemeral(c *corev1.EphemeralContainerCommon) {
	containerCommon((*corev1.Container)(c))
}

// containerCommon: pull policy, termination message path and policy, port
// protocols and env defaults, shared by containers and ephemeral containers.
func containerCommon(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = ImagePullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = defaultTerminationMessagePath
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	envVars(c.Env)
}

func envVars(env []corev1.EnvVar) {
	for i := range env {
		if env[i].ValueFrom != nil {
			fieldSelector(env[i].ValueFrom.FieldRef)
		}
	}
}

func fieldSelector(f *corev1.ObjectFieldSelector) {
	if f != nil && f.APIVersion == "" {
		f.APIVersion = "v1"
	}
}

func probe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	httpGet(p.HTTPGet)
}

func lifecycle(l *corev1.Lifecycle) {
	if l == nil {
		return
	}
	if l.PostStart != nil {
		httpGet(l.PostStart.HTTPGet)
	}
	if l.PreStop != nil {
		httpGet(l.PreStop.HTTPGet)
	}
}

func httpGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

// copyLimitsToRequests gives every resource that has a limit but no request a
// request equal to the limit (SetDefaults_Pod).
func copyLimitsToRequests(r *corev1.ResourceRequirements) {
	if len(r.Limits) == 0 {
		return
	}
	if r.Requests == nil {
		r.Requests = make(corev1.ResourceList)
	}
	for name, limit := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			r.Requests[name] = limit.DeepCopy()
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
