package endpoints

import (
	"net/http"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// table renders objs as a meta.k8s.io/v1 Table with the resource's columns.
// Every column is produced (wide ones carry priority 1); includeObject picks
// what each row embeds (Metadata by default).
func (c *Codec) Table(r *http.Request, res *registry.Resource, objs []runtime.Object, lm metav1.ListMeta) *metav1.Table {
	now := c.clock.Now()
	t := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}, ListMeta: lm}
	t.ColumnDefinitions = columnsOf(res)
	include := metav1.IncludeMetadata
	if v := r.URL.Query().Get("includeObject"); v != "" {
		include = metav1.IncludeObjectPolicy(v)
	}
	t.Rows = make([]metav1.TableRow, 0, len(objs))
	for _, obj := range objs {
		row := rowOf(res, obj, now)
		switch include {
		case metav1.IncludeObject:
			row.Object = runtime.RawExtension{Object: obj}
		case metav1.IncludeNone:
		default:
			row.Object = runtime.RawExtension{Object: PartialMetadata(obj)}
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func columnsOf(res *registry.Resource) []metav1.TableColumnDefinition {
	if res.Columns != nil {
		return res.Columns
	}
	return registry.DefaultColumns()
}

func rowOf(res *registry.Resource, obj runtime.Object, now time.Time) metav1.TableRow {
	m := accessor(obj)
	if res.Row != nil {
		return res.Row(obj, now)
	}
	created := m.GetCreationTimestamp()
	return metav1.TableRow{Cells: []interface{}{m.GetName(), created.UTC().Format("2006-01-02T15:04:05Z")}}
}
