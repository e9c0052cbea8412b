package registry

import (
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PodDisruptionBudgets is policy/v1 poddisruptionbudgets. They are stored
// and served; evictions do not consult them yet.
func PodDisruptionBudgets() *Resource {
	return &Resource{
		GVR: policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets"), Kind: "PodDisruptionBudget",
		Singular: "poddisruptionbudget", Namespaced: true, ShortNames: []string{"pdb"}, Subresources: []string{"status"},
		New:     func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		NewList: func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		HasSpec: true,
		PrepareForCreate: func(obj runtime.Object) {
			obj.(*policyv1.PodDisruptionBudget).Status = policyv1.PodDisruptionBudgetStatus{}
		},
		PrepareForUpdate: func(obj, old runtime.Object) {
			obj.(*policyv1.PodDisruptionBudget).Status = old.(*policyv1.PodDisruptionBudget).Status
		},
		PrepareForStatusUpdate: func(obj, old runtime.Object) {
			obj.(*policyv1.PodDisruptionBudget).Spec = old.(*policyv1.PodDisruptionBudget).Spec
		},
		Columns: []metav1.TableColumnDefinition{
			nameColumn(),
			col("Min Available", policyv1.PodDisruptionBudgetSpec{}.SwaggerDoc()["minAvailable"]),
			col("Max Unavailable", policyv1.PodDisruptionBudgetSpec{}.SwaggerDoc()["maxUnavailable"]),
			col("Allowed Disruptions", policyv1.PodDisruptionBudgetStatus{}.SwaggerDoc()["disruptionsAllowed"]),
			ageColumn(),
		},
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			p := obj.(*policyv1.PodDisruptionBudget)
			return metav1.TableRow{Cells: []interface{}{p.Name, intOrNA(p.Spec.MinAvailable), intOrNA(p.Spec.MaxUnavailable),
				int64(p.Status.DisruptionsAllowed), since(p.CreationTimestamp, now)}}
		},
	}
}

func intOrNA(v *intstr.IntOrString) string {
	if v == nil {
		return "N/A"
	}
	return v.String()
}
