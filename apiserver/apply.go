package apiserver

import (
	"context"

	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/registry"
	"k8s.io/apimachinery/pkg/runtime"
)

// trackManager records an Update operation in managedFields when the
// request named a fieldManager (kubectl does; controllers usually do not,
// and skip the cost). Failures leave the object as it was.
func (s *Server) trackManager(ctx context.Context, res *registry.Resource, status bool, cur, obj runtime.Object) runtime.Object {
	manager := endpoints.FieldManagerOf(ctx)
	if manager == "" {
		return obj
	}
	sub := ""
	if status {
		sub = "status"
	}
	return s.fieldManagers.Update(res, sub, cur, obj, manager)
}
