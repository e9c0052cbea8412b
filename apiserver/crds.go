package apiserver

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/batchlet/batchlet/apiserver/crdsync"
	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/install"
	"github.com/batchlet/batchlet/storage"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

var crdGVR = apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")

func isWriteVerb(verb string) bool {
	switch verb {
	case "get", "list", "watch":
		return false
	}
	return true
}

func (s *Server) crdResource() *registry.Resource {
	return s.resource(apiextensionsv1.GroupName, "v1", "customresourcedefinitions")
}

// bootstrapCRDs creates install/'s CRDs (JobSet's and batchlet's own
// results) that are missing, so a data dir from an older version gains the
// new ones, and serves the established CRDs found in the store.
func (s *Server) bootstrapCRDs(ctx context.Context) error {
	res := s.crdResource()
	crds, err := generatedCRDs()
	if err != nil {
		return fmt.Errorf("apiserver: read install's CRDs: %w", err)
	}
	// The generated CRDs are trusted and complete: validating their large
	// schemas and establishing them in a second write would cost every
	// start (and every test server) a good part of a second.
	trusted := *res
	trusted.Validate, trusted.ValidateChecksMeta, trusted.PrepareForCreate = nil, false, nil
	now := metav1.NewTime(s.clock.Now())
	for _, generated := range crds {
		if _, err := s.store.Get(ctx, genericstore.ObjectKey(res, "", generated.Name)); err == nil {
			continue
		} else if !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("apiserver: read CRD %s: %w", generated.Name, err)
		}
		// A shallow copy: the create sets metadata and status and only
		// reads the (large) spec.
		c := *generated
		crd := &c
		crd.Status = crdsync.EstablishedStatus(crd, now)
		if _, err := s.createObject(ctx, &trusted, crd, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("apiserver: create CRD %s: %w", crd.Name, err)
		}
	}
	s.crds.Sync(ctx)
	return nil
}

// generatedCRDs are install/'s CRDs, decoded once per process (the YAML
// is large) and never modified: callers copy them.
var generatedCRDs = sync.OnceValues(func() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	objs, err := install.CRDs()
	if err != nil {
		return nil, err
	}
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(objs))
	for _, u := range objs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			return nil, fmt.Errorf("decode %s: %w", u.GetName(), err)
		}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		out = append(out, crd)
	}
	return out, nil
})

// crdStore gives the CRD loop the server's storage: CRDs are written raw,
// past their strategy; the objects of a deleted CRD are listed and
// deleted through the server's own paths, as a namespace's are.
type crdStore struct{ contentStore }

var _ crdsync.Store = crdStore{}

func (c crdStore) CRDs(ctx context.Context) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	res := c.s.crdResource()
	lr, err := c.s.objects.List(ctx, res, "", genericstore.Everything(res), 0, "", "", "")
	if err != nil {
		return nil, err
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(lr.Items))
	for _, obj := range lr.Items {
		crds = append(crds, obj.(*apiextensionsv1.CustomResourceDefinition))
	}
	return crds, nil
}

func (c crdStore) UpdateCRD(ctx context.Context, name string, mutate func(*apiextensionsv1.CustomResourceDefinition)) (*apiextensionsv1.CustomResourceDefinition, error) {
	out, err := c.s.updateObject(ctx, c.s.crdResource(), "", name, modeRaw, false, func(cur runtime.Object) (runtime.Object, error) {
		crd := cur.(*apiextensionsv1.CustomResourceDefinition)
		mutate(crd)
		return crd, nil
	})
	if err != nil {
		return nil, err
	}
	return out.(*apiextensionsv1.CustomResourceDefinition), nil
}

// crdNamed reads a CRD for discovery's OpenAPI documents (only read).
func (s *Server) crdNamed(ctx context.Context, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	obj, _, err := s.objects.GetShared(ctx, s.crdResource(), "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*apiextensionsv1.CustomResourceDefinition), nil
}
