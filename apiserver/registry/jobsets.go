package registry

import (
	"strconv"
	"time"

	"github.com/batchlet/batchlet/apiserver/defaults"
	"github.com/batchlet/batchlet/apiserver/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// JobSets is jobset.x-k8s.io/v1alpha2 jobsets, served like the upstream CRD.
func JobSets() *Resource {
	return &Resource{
		GVR: jobsetv1alpha2.GroupVersion.WithResource("jobsets"), Kind: "JobSet", Singular: "jobset", Namespaced: true,
		Subresources: []string{"status"}, NoStrategicMerge: true,
		New:        func() runtime.Object { return &jobsetv1alpha2.JobSet{} },
		NewList:    func() runtime.Object { return &jobsetv1alpha2.JobSetList{} },
		HasSpec:    true,
		DefaultRaw: defaults.JobSetUnstructured,
		PrepareForCreate: func(obj runtime.Object) {
			js := obj.(*jobsetv1alpha2.JobSet)
			js.Status = jobsetv1alpha2.JobSetStatus{}
			defaults.JobSet(js)
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			js := obj.(*jobsetv1alpha2.JobSet)
			js.Status = old.(*jobsetv1alpha2.JobSet).Status
			defaults.JobSet(js)
		},
		PrepareForStatusUpdate: func(obj, old runtime.Object) {
			obj.(*jobsetv1alpha2.JobSet).Spec = old.(*jobsetv1alpha2.JobSet).Spec
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			return validation.ValidateJobSet(obj.(*jobsetv1alpha2.JobSet))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return validation.ValidateJobSetUpdate(obj.(*jobsetv1alpha2.JobSet), old.(*jobsetv1alpha2.JobSet))
		},
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			{Name: "TerminalState", Type: "string", Description: "Final state of JobSet"},
			{Name: "Restarts", Type: "string", Description: "Number of restarts"},
			{Name: "Completed", Type: "string"},
			{Name: "Suspended", Type: "string", Description: "JobSet suspended"},
			{Name: "Age", Type: "date", Description: "Time this JobSet was created"},
		},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			return jobSetRow(obj.(*jobsetv1alpha2.JobSet), now)
		},
	}
}

// jobSetRow mirrors the CRD's additionalPrinterColumns: absent values are nil.
func jobSetRow(js *jobsetv1alpha2.JobSet, now time.Time) metav1.TableRow {
	var terminal, restarts, completed, suspended interface{}
	if js.Status.TerminalState != "" {
		terminal = js.Status.TerminalState
	}
	restarts = strconv.Itoa(int(js.Status.Restarts))
	for _, c := range js.Status.Conditions {
		if c.Type == string(jobsetv1alpha2.JobSetCompleted) {
			completed = string(c.Status)
			break
		}
	}
	if js.Spec.Suspend != nil {
		suspended = strconv.FormatBool(*js.Spec.Suspend)
	}
	return metav1.TableRow{Cells: []interface{}{js.Name, terminal, restarts, completed, suspended, since(js.CreationTimestamp, now)}}
}
