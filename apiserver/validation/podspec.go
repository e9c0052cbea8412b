package validation

import (
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidatePodTemplateSpec checks a pod template the way ValidatePodTemplateSpec
// does: template labels and annotations, then the pod spec.
func ValidatePodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateLabels(t.Labels, fldPath.Child("labels"))
	allErrs = append(allErrs, apimachineryvalidation.ValidateAnnotations(t.Annotations, fldPath.Child("annotations"))...)
	allErrs = append(allErrs, ValidatePodSpec(&t.Spec, fldPath.Child("spec"))...)
	if len(t.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return allErrs
}

// ValidatePodSpec checks the essentials of a pod spec with upstream's paths
// and messages: volumes, containers, restartPolicy, dnsPolicy, nodeSelector,
// serviceAccountName, activeDeadlineSeconds, hostname/subdomain and
// tolerations.
func ValidatePodSpec(spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	volumes, allErrs := validateVolumes(spec.Volumes, fldPath.Child("volumes"))
	names := sets.New[string]()
	allErrs = append(allErrs, validateContainers(spec.Containers, volumes, names, fldPath.Child("containers"))...)
	allErrs = append(allErrs, validateInitContainers(spec.InitContainers, volumes, names, fldPath.Child("initContainers"))...)
	allErrs = append(allErrs, validateEnum(spec.RestartPolicy, fldPath.Child("restartPolicy"),
		corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)...)
	allErrs = append(allErrs, validateEnum(spec.DNSPolicy, fldPath.Child("dnsPolicy"),
		corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone)...)
	allErrs = append(allErrs, validateLabels(spec.NodeSelector, fldPath.Child("nodeSelector"))...)
	if spec.ServiceAccountName != "" {
		for _, msg := range dnsSubdomainNameMsgs(spec.ServiceAccountName) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("serviceAccountName"), spec.ServiceAccountName, msg))
		}
	}
	allErrs = append(allErrs, validateNodeName(spec.NodeName, fldPath.Child("nodeName"))...)
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	allErrs = append(allErrs, validateDNS1123Label(spec.Hostname, fldPath.Child("hostname"))...)
	allErrs = append(allErrs, validateDNS1123Label(spec.Subdomain, fldPath.Child("subdomain"))...)
	allErrs = append(allErrs, validateTolerations(spec.Tolerations, fldPath.Child("tolerations"))...)
	return allErrs
}

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	return validateOptionalName(value, dns1123LabelMsgs, fldPath)
}

// validateOptionalName is one Invalid error per message msgs gives of a
// set value; an empty one is valid.
func validateOptionalName(value string, msgs func(string) []string, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return nil
	}
	var allErrs field.ErrorList
	for _, msg := range msgs(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, t := range tolerations {
		idxPath := fldPath.Index(i)
		if t.Key != "" {
			allErrs = append(allErrs, validateLabelName(t.Key, idxPath.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("effect"), t.Effect,
				"effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			for _, msg := range labelValueMsgs(t.Value) {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value, msg))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				allErrs = append(allErrs, field.Invalid(idxPath.Child("operator"), t.Value,
					"value must be empty when `operator` is 'Exists'"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(idxPath.Child("operator"), t.Operator,
				[]corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" {
			allErrs = append(allErrs, validateTaintEffect(t.Effect, idxPath.Child("effect"))...)
		}
	}
	return allErrs
}

func validateTaintEffect(e corev1.TaintEffect, fldPath *field.Path) field.ErrorList {
	switch e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, e, []corev1.TaintEffect{
		corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute})}
}

// validateVolumes returns the set of valid volume names and the errors.
func validateVolumes(volumes []corev1.Volume, fldPath *field.Path) (sets.Set[string], field.ErrorList) {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, vol := range volumes {
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		errs := validateVolumeSource(&vol.VolumeSource, idxPath)
		if vol.Name == "" {
			errs = append(errs, field.Required(namePath, ""))
		} else {
			errs = append(errs, validateDNS1123Label(vol.Name, namePath)...)
		}
		if names.Has(vol.Name) {
			errs = append(errs, field.Duplicate(namePath, vol.Name))
		}
		if len(errs) == 0 {
			names.Insert(vol.Name)
		}
		allErrs = append(allErrs, errs...)
	}
	return names, allErrs
}

func validateVolumeSource(src *corev1.VolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	set := volumeSourceNames(src)
	if len(set) == 0 {
		return field.ErrorList{field.Required(fldPath, "must specify a volume type")}
	}
	for _, name := range set[1:] {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child(name), "may not specify more than 1 volume type"))
	}
	if src.HostPath != nil && src.HostPath.Path == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("hostPath", "path"), ""))
	}
	if src.Secret != nil && src.Secret.SecretName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("secret", "secretName"), ""))
	}
	if src.ConfigMap != nil && src.ConfigMap.Name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("configMap", "name"), ""))
	}
	if src.PersistentVolumeClaim != nil && src.PersistentVolumeClaim.ClaimName == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("persistentVolumeClaim", "claimName"), ""))
	}
	return allErrs
}

// volumeSourceNames lists, in upstream's check order, the sources set.
func volumeSourceNames(s *corev1.VolumeSource) []string {
	var names []string
	add := func(set bool, name string) {
		if set {
			names = append(names, name)
		}
	}
	add(s.HostPath != nil, "hostPath")
	add(s.EmptyDir != nil, "emptyDir")
	add(s.GitRepo != nil, "gitRepo")
	add(s.GCEPersistentDisk != nil, "gcePersistentDisk")
	add(s.AWSElasticBlockStore != nil, "awsElasticBlockStore")
	add(s.Secret != nil, "secret")
	add(s.NFS != nil, "nfs")
	add(s.ISCSI != nil, "iscsi")
	add(s.Glusterfs != nil, "glusterfs")
	add(s.PersistentVolumeClaim != nil, "persistentVolumeClaim")
	add(s.RBD != nil, "rbd")
	add(s.FlexVolume != nil, "flexVolume")
	add(s.Cinder != nil, "cinder")
	add(s.CephFS != nil, "cephfs")
	add(s.Flocker != nil, "flocker")
	add(s.DownwardAPI != nil, "downwardAPI")
	add(s.FC != nil, "fc")
	add(s.AzureFile != nil, "azureFile")
	add(s.ConfigMap != nil, "configMap")
	add(s.VsphereVolume != nil, "vsphereVolume")
	add(s.Quobyte != nil, "quobyte")
	add(s.AzureDisk != nil, "azureDisk")
	add(s.PhotonPersistentDisk != nil, "photonPersistentDisk")
	add(s.Projected != nil, "projected")
	add(s.PortworxVolume != nil, "portworxVolume")
	add(s.ScaleIO != nil, "scaleIO")
	add(s.StorageOS != nil, "storageos")
	add(s.CSI != nil, "csi")
	add(s.Ephemeral != nil, "ephemeral")
	add(s.Image != nil, "image")
	return names
}

func trimmed(s string) bool { return strings.TrimSpace(s) == s }

// validateNodeName checks spec.nodeName, which binding sets without
// validating it (as kube-apiserver's binding), so that a stored spec can
// fail this rule alone.
func validateNodeName(name string, fldPath *field.Path) field.ErrorList {
	return validateOptionalName(name, dnsSubdomainNameMsgs, fldPath)
}
