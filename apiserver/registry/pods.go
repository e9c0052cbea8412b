package registry

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/batchlet/batchlet/apiserver/defaults"
	"github.com/batchlet/batchlet/apiserver/validation"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pods is core/v1 pods.
func Pods() *Resource {
	return &Resource{
		GVR: corev1.SchemeGroupVersion.WithResource("pods"), Kind: "Pod", Singular: "pod", Namespaced: true,
		ShortNames: []string{"po"}, Categories: []string{"all"},
		Subresources: []string{"status", "binding", "eviction", "log", "exec", "attach"},
		New:          func() runtime.Object { return &corev1.Pod{} },
		NewList:      func() runtime.Object { return &corev1.PodList{} },
		HasSpec:      true,
		PrepareForCreate: func(obj runtime.Object) {
			pod := obj.(*corev1.Pod)
			defaults.Pod(pod)
			defaults.AdmitPod(pod)
			pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: podQOS(pod)}
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
			pod.Status = oldPod.Status
			defaultUpdatedSpec(pod, oldPod)
		},
		PrepareForUpdateCopiesOnWrite: true,
		PrepareForStatusUpdate: func(obj, old runtime.Object) {
			pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
			pod.Spec = oldPod.Spec
			// As upstream's pod status strategy: owner references are not
			// the status writer's (old kubelets corrupted them, breaking
			// garbage collection), and the QoS class set at creation is
			// backfilled when a writer dropped it.
			pod.OwnerReferences = oldPod.OwnerReferences
			if pod.Status.QOSClass == "" {
				pod.Status.QOSClass = oldPod.Status.QOSClass
			}
		},
		Validate:           func(obj runtime.Object) field.ErrorList { return validation.ValidatePod(obj.(*corev1.Pod)) },
		ValidateChecksMeta: true,
		// ValidatePodUpdate* and ValidatePodStatusUpdate begin with the
		// object-meta update checks, as upstream's (once: a second run
		// listed each metadata error twice).
		ValidateUpdateChecksMeta: true,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidatePodUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
		},
		ValidateUpdateSpecKnown: func(obj, old runtime.Object, specEqual bool) field.ErrorList {
			pod, oldPod := obj.(*corev1.Pod), old.(*corev1.Pod)
			if sameSpecMemory(&pod.Spec, &oldPod.Spec) {
				return validation.ValidatePodUpdateStoredSpec(pod, oldPod)
			}
			return validation.ValidatePodUpdateSpecKnown(pod, oldPod, specEqual)
		},
		ValidateStatusUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidatePodStatusUpdate(obj.(*corev1.Pod), old.(*corev1.Pod))
		},
		Fields: func(obj runtime.Object) fields.Set {
			pod := obj.(*corev1.Pod)
			podIP := ""
			if len(pod.Status.PodIPs) > 0 {
				podIP = pod.Status.PodIPs[0].IP
			}
			return fields.Set{
				"spec.nodeName":            pod.Spec.NodeName,
				"spec.restartPolicy":       string(pod.Spec.RestartPolicy),
				"spec.schedulerName":       pod.Spec.SchedulerName,
				"spec.serviceAccountName":  pod.Spec.ServiceAccountName,
				"spec.hostNetwork":         strconv.FormatBool(pod.Spec.HostNetwork),
				"status.phase":             string(pod.Status.Phase),
				"status.podIP":             podIP,
				"status.nominatedNodeName": pod.Status.NominatedNodeName,
			}
		},
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Ready", "The aggregate readiness state of this pod for accepting traffic."),
			col("Status", "The aggregate status of the containers in this pod."),
			col("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
			ageColumn(),
			wideCol("IP", corev1.PodStatus{}.SwaggerDoc()["podIP"]),
			wideCol("Node", corev1.PodSpec{}.SwaggerDoc()["nodeName"]),
			wideCol("Nominated Node", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]),
			wideCol("Readiness Gates", corev1.PodSpec{}.SwaggerDoc()["readinessGates"]),
		},
		Row:            func(obj runtime.Object, now time.Time) metav1.TableRow { return podRow(obj.(*corev1.Pod), now) },
		GracefulDelete: podGrace,
	}
}

// podGrace: pods bound to a node and not terminal are deleted gracefully.
func podGrace(obj runtime.Object, requested *int64) (int64, bool) {
	pod := obj.(*corev1.Pod)
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0, false
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if requested != nil {
		grace = *requested
	}
	return grace, grace > 0
}

func podQOS(pod *corev1.Pod) corev1.PodQOSClass {
	any, guaranteed := false, true
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			any = true
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			lim, ok := c.Resources.Limits[r]
			if !ok {
				guaranteed = false
				continue
			}
			if req, ok := c.Resources.Requests[r]; ok && req.Cmp(lim) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func isRestartableInit(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// podRow computes kubectl's READY, STATUS and RESTARTS the way printers do.
func podRow(pod *corev1.Pod, now time.Time) metav1.TableRow {
	row := metav1.TableRow{}
	restarts, sidecarRestarts := 0, 0
	total := len(pod.Spec.Containers)
	ready := 0
	var lastRestart, lastSidecarRestart metav1.Time
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		row.Conditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: "Failed", Message: "The pod failed."}}
	}
	inits := map[string]*corev1.Container{}
	for i := range pod.Spec.InitContainers {
		inits[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
		if isRestartableInit(&pod.Spec.InitContainers[i]) {
			total++
		}
	}
	initializing := false
	for i, c := range pod.Status.InitContainerStatuses {
		restarts += int(c.RestartCount)
		if t := c.LastTerminationState.Terminated; t != nil && lastRestart.Before(&t.FinishedAt) {
			lastRestart = t.FinishedAt
		}
		sidecar := isRestartableInit(inits[c.Name])
		if sidecar {
			sidecarRestarts += int(c.RestartCount)
			if t := c.LastTerminationState.Terminated; t != nil && lastSidecarRestart.Before(&t.FinishedAt) {
				lastSidecarRestart = t.FinishedAt
			}
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case sidecar && c.Started != nil && *c.Started:
			if c.Ready {
				ready++
			}
			continue
		case c.State.Terminated != nil:
			switch {
			case c.State.Terminated.Reason != "":
				reason = "Init:" + c.State.Terminated.Reason
			case c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", c.State.Terminated.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", c.State.Terminated.ExitCode)
			}
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}
	if !initializing || podConditionTrue(pod, corev1.PodInitialized) {
		restarts, lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := pod.Status.ContainerStatuses[i]
			restarts += int(c.RestartCount)
			if t := c.LastTerminationState.Terminated; t != nil && lastRestart.Before(&t.FinishedAt) {
				lastRestart = t.FinishedAt
			}
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				reason = c.State.Terminated.Reason
			case c.State.Terminated != nil && c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
			case c.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
			case c.Ready && c.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" && hasRunning {
			reason = "NotReady"
			if podConditionTrue(pod, corev1.PodReady) {
				reason = "Running"
			}
		}
	}
	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if pod.DeletionTimestamp != nil && pod.Status.Reason == "NodeLost" {
		reason = "Unknown"
	} else if pod.DeletionTimestamp != nil && !terminal {
		reason = "Terminating"
	}
	restartStr := strconv.Itoa(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartStr = fmt.Sprintf("%d (%s ago)", restarts, since(lastRestart, now))
	}
	ip, node, nominated := "<none>", "<none>", "<none>"
	if len(pod.Status.PodIPs) > 0 && pod.Status.PodIPs[0].IP != "" {
		ip = pod.Status.PodIPs[0].IP
	}
	if pod.Spec.NodeName != "" {
		node = pod.Spec.NodeName
	}
	if pod.Status.NominatedNodeName != "" {
		nominated = pod.Status.NominatedNodeName
	}
	gates := "<none>"
	if len(pod.Spec.ReadinessGates) > 0 {
		trueCount := 0
		for _, g := range pod.Spec.ReadinessGates {
			if podConditionTrue(pod, g.ConditionType) {
				trueCount++
			}
		}
		gates = fmt.Sprintf("%d/%d", trueCount, len(pod.Spec.ReadinessGates))
	}
	row.Cells = []interface{}{pod.Name, fmt.Sprintf("%d/%d", ready, total), reason, restartStr, since(pod.CreationTimestamp, now), ip, node, nominated, gates}
	return row
}

func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// defaultUpdatedSpec applies the pod spec defaults to an updated pod
// without writing into memory it may share with the stored one. A spec the
// update left as it was (a metadata patch of the shared current pod: the
// same memory as the stored spec) is not defaulted again: every write that
// stores a pod spec defaulted it (create, a spec update through here) or
// set a field without a default (binding's nodeName), and the status
// strategy keeps the stored spec. Only a pod stored before a default
// existed lacks one, and re-defaulting it made every metadata update fail
// as a forbidden spec change (kube-apiserver defaults the stored object on
// read, so the update changes no spec there). Any other spec is defaulted
// on a copy of its own (a spec patch shares the parts it did not name).
func defaultUpdatedSpec(pod, old *corev1.Pod) {
	if sameSpecMemory(&pod.Spec, &old.Spec) {
		return
	}
	spec := pod.Spec.DeepCopy()
	defaults.PodSpec(spec)
	pod.Spec = *spec
}

// sameSpecMemory says whether a and b hold identical bytes: the same
// scalars and the same references, so one spec in fact.
func sameSpecMemory(a, b *corev1.PodSpec) bool {
	size := unsafe.Sizeof(*a)
	return bytes.Equal(unsafe.Slice((*byte)(unsafe.Pointer(a)), size), unsafe.Slice((*byte)(unsafe.Pointer(b)), size))
}
