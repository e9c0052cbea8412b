package apiserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/batchlet/batchlet/apiserver/genericstore"

	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/install"
	"github.com/batchlet/batchlet/storage"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
)

// builtinCRD names the CRD of the built-in JobSet resource: batchlet
// serves jobsets itself (typed, with its own validation) and reports this
// CRD, created at start from install/'s generated manifest, as
// established. Applying it updates the stored CRD and keeps the built-in
// serving.
const builtinCRD = "jobsets.jobset.x-k8s.io"

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
		names, accepted, established := acceptNames(crd, crdNames{resources: sets.New[string](), kinds: sets.New[string]()}, now)
		crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: names,
			Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{accepted, established}}
		if v, err := apihelpers.GetCRDStorageVersion(crd); err == nil {
			crd.Status.StoredVersions = []string{v}
		}
		if _, err := s.createObject(ctx, &trusted, crd, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("apiserver: create CRD %s: %w", crd.Name, err)
		}
	}
	s.syncCRDs(ctx)
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

// runCRDLoop re-syncs the CRDs until ctx ends: a terminating CRD whose
// objects were still finalizing is finished on a later pass.
func (s *Server) runCRDLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.clock.After(s.cfg.NamespaceSyncInterval):
		}
		s.syncCRDs(ctx)
	}
}

// syncCRDs does what kube-apiserver's CRD controllers do, in one pass
// over all CRDs: accept names (NamesAccepted, Established), serve the
// established ones, clean up and forget deleted ones.
func (s *Server) syncCRDs(ctx context.Context) {
	s.crdMu.Lock()
	defer s.crdMu.Unlock()
	res := s.crdResource()
	everything := genericstore.Everything(res)
	lr, err := s.objects.List(ctx, res, "", everything, 0, "", "", "")
	if err != nil {
		s.log.Warn("list CRDs", "err", err)
		return
	}
	// Only read: the items may be the store's shared decoded copies.
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(lr.Items))
	for _, obj := range lr.Items {
		crds = append(crds, obj.(*apiextensionsv1.CustomResourceDefinition))
	}
	// The oldest CRD keeps a contested name, as upstream where it was
	// accepted first.
	sort.SliceStable(crds, func(i, j int) bool {
		return crds[i].CreationTimestamp.Before(&crds[j].CreationTimestamp)
	})
	alive := map[string]bool{}
	for _, crd := range crds {
		if crd.DeletionTimestamp != nil {
			if s.finishCRD(ctx, crd) {
				continue
			}
			alive[crd.Name] = true
			continue
		}
		alive[crd.Name] = true
		if err := s.syncCRD(ctx, crd, crds); err != nil {
			s.log.Warn("sync CRD", "name", crd.Name, "err", err)
		}
	}
	for name := range s.served.definitions() {
		if !alive[name] {
			s.served.setDefinition(name, "", nil)
		}
	}
}

// syncCRD accepts the names of one CRD, records its conditions and serves it.
func (s *Server) syncCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, all []*apiextensionsv1.CustomResourceDefinition) error {
	taken := s.takenNames(crd, all)
	now := metav1.NewTime(s.clock.Now())
	names, accepted, established := acceptNames(crd, taken, now)
	want := &apiextensionsv1.CustomResourceDefinition{Status: *crd.Status.DeepCopy()}
	want.Status.AcceptedNames = names
	setCRDCondition(want, accepted, now)
	setCRDCondition(want, established, now)
	if !equalCRDStatus(crd, want) {
		out, err := s.updateObject(ctx, s.crdResource(), "", crd.Name, modeRaw, false, func(cur runtime.Object) (runtime.Object, error) {
			c := cur.(*apiextensionsv1.CustomResourceDefinition)
			c.Status.AcceptedNames = names
			setCRDCondition(c, accepted, now)
			setCRDCondition(c, established, now)
			return c, nil
		})
		if err != nil {
			return fmt.Errorf("update status: %w", err)
		}
		crd = out.(*apiextensionsv1.CustomResourceDefinition)
	}
	if crd.Name == builtinCRD || !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		return nil
	}
	if s.served.servedFrom(crd.Name) == crd.ResourceVersion {
		return nil // schemas and CEL rules compiled already
	}
	rs, err := registry.CustomResources(crd)
	if err != nil {
		return err
	}
	s.served.setDefinition(crd.Name, crd.ResourceVersion, rs)
	return nil
}

// takenNames are the resource and kind names of crd's group used by the
// built-in resources and by the other CRDs' accepted names.
func (s *Server) takenNames(crd *apiextensionsv1.CustomResourceDefinition, all []*apiextensionsv1.CustomResourceDefinition) crdNames {
	taken := crdNames{resources: sets.New[string](), kinds: sets.New[string]()}
	for _, r := range s.served.list() {
		if r.CustomResource || r.GVR.Group != crd.Spec.Group {
			continue
		}
		if crd.Name == builtinCRD && r.GVR.Resource+"."+r.GVR.Group == builtinCRD {
			continue // the CRD describes this very resource
		}
		taken.resources.Insert(r.GVR.Resource, r.Singular)
		taken.resources.Insert(r.ShortNames...)
		taken.kinds.Insert(r.Kind, r.Kind+"List")
	}
	for _, other := range all {
		if other.Name == crd.Name || other.Spec.Group != crd.Spec.Group {
			continue
		}
		n := other.Status.AcceptedNames
		taken.resources.Insert(n.Plural, n.Singular)
		taken.resources.Insert(n.ShortNames...)
		taken.kinds.Insert(n.Kind, n.ListKind)
	}
	taken.resources.Delete("")
	taken.kinds.Delete("")
	return taken
}

// crdNames are resource names (plural, singular, short) and kinds in use.
type crdNames struct {
	resources, kinds sets.Set[string]
}

// acceptNames is upstream's naming decision: each requested name is
// accepted when it is already ours or nobody else's; the first conflict
// found names the reason. A CRD whose names are all accepted is
// established (batchlet serves it at once).
func acceptNames(crd *apiextensionsv1.CustomResourceDefinition, taken crdNames, now metav1.Time) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition, apiextensionsv1.CustomResourceDefinitionCondition) {
	req, acc := crd.Spec.Names, crd.Status.AcceptedNames
	out := acc
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionUnknown}
	conflict := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}
	if err := freshOrOurs(req.Plural, acc.Plural, taken.resources); err != nil {
		conflict("PluralConflict", err)
	} else {
		out.Plural = req.Plural
	}
	if err := freshOrOurs(req.Singular, acc.Singular, taken.resources); err != nil {
		conflict("SingularConflict", err)
	} else {
		out.Singular = req.Singular
	}
	shortOK := true
	ours := sets.New(acc.ShortNames...)
	for _, sn := range req.ShortNames {
		if ours.Has(sn) {
			continue
		}
		if err := freshOrOurs(sn, "", taken.resources); err != nil {
			conflict("ShortNamesConflict", err)
			shortOK = false
		}
	}
	if shortOK {
		out.ShortNames = req.ShortNames
	}
	if err := freshOrOurs(req.Kind, acc.Kind, taken.kinds); err != nil {
		conflict("KindConflict", err)
	} else {
		out.Kind = req.Kind
	}
	if err := freshOrOurs(req.ListKind, acc.ListKind, taken.kinds); err != nil {
		conflict("ListKindConflict", err)
	} else {
		out.ListKind = req.ListKind
	}
	out.Categories = req.Categories
	if cond.Status == apiextensionsv1.ConditionUnknown {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found"
	}
	est := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
		Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"}
	if old := apihelpers.FindCRDCondition(crd, apiextensionsv1.Established); old != nil {
		est = *old
	}
	if est.Status != apiextensionsv1.ConditionTrue && cond.Status == apiextensionsv1.ConditionTrue {
		est = apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
			Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}
	}
	cond.LastTransitionTime, est.LastTransitionTime = now, now
	return out, cond, est
}

func freshOrOurs(requested, accepted string, used sets.Set[string]) error {
	if requested == accepted || !used.Has(requested) {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}

// setCRDCondition sets c, keeping the transition time when the status
// does not change.
func setCRDCondition(crd *apiextensionsv1.CustomResourceDefinition, c apiextensionsv1.CustomResourceDefinitionCondition, now metav1.Time) {
	if old := apihelpers.FindCRDCondition(crd, c.Type); old != nil && old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	} else {
		c.LastTransitionTime = now
	}
	apihelpers.SetCRDCondition(crd, c)
}

// equalCRDStatus: same accepted names and equivalent conditions (their
// transition times aside).
func equalCRDStatus(a, b *apiextensionsv1.CustomResourceDefinition) bool {
	if !equality.Semantic.DeepEqual(a.Status.AcceptedNames, b.Status.AcceptedNames) || len(a.Status.Conditions) != len(b.Status.Conditions) {
		return false
	}
	for _, c := range b.Status.Conditions {
		if !apihelpers.IsCRDConditionEquivalent(&c, apihelpers.FindCRDCondition(a, c.Type)) {
			return false
		}
	}
	return true
}

// finishCRD deletes the objects of a terminating CRD and then drops its
// cleanup finalizer; true when the CRD is gone or no longer served.
func (s *Server) finishCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) bool {
	var res *registry.Resource
	for _, r := range s.served.list() {
		if r.CustomResource && r.Definition == crd.Name {
			res = r
			break
		}
	}
	remaining := 0
	if res != nil {
		s.served.setTerminating(crd.Name)
		n, err := s.deleteAllOf(ctx, res)
		if err != nil {
			s.log.Warn("delete custom resources", "name", crd.Name, "err", err)
			return false
		}
		remaining = n
	}
	if remaining > 0 {
		s.setTerminating(ctx, crd.Name, "InstanceDeletionInProgress", "CustomResource deletion is in progress")
		return false
	}
	s.served.setDefinition(crd.Name, "", nil)
	if !apihelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		return true
	}
	_, err := s.updateObject(ctx, s.crdResource(), "", crd.Name, modeRaw, false, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*apiextensionsv1.CustomResourceDefinition)
		setCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating,
			Status: apiextensionsv1.ConditionFalse, Reason: "InstanceDeletionCompleted", Message: "removed all instances"}, metav1.NewTime(s.clock.Now()))
		apihelpers.CRDRemoveFinalizer(c, apiextensionsv1.CustomResourceCleanupFinalizer)
		return c, nil
	})
	if err != nil && !apierrors.IsNotFound(err) {
		s.log.Warn("remove CRD cleanup finalizer", "name", crd.Name, "err", err)
	}
	return true
}

// deleteAllOf deletes every object of res in all namespaces and returns
// how many are still there (finalizing).
func (s *Server) deleteAllOf(ctx context.Context, res *registry.Resource) (int, error) {
	everything := genericstore.Everything(res)
	lr, err := s.objects.List(ctx, res, "", everything, 0, "", "", "")
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", res.GVR.Resource, err)
	}
	remaining := 0
	bg := metav1.DeletePropagationBackground
	for _, obj := range lr.Items {
		m := genericstore.Accessor(obj)
		if m.GetDeletionTimestamp() != nil {
			remaining++
			continue
		}
		_, deleted, err := s.deleteObject(ctx, res, m.GetNamespace(), m.GetName(), &metav1.DeleteOptions{PropagationPolicy: &bg})
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("delete %s %s/%s: %w", res.GVR.Resource, m.GetNamespace(), m.GetName(), err)
		}
		if err == nil && !deleted {
			remaining++
		}
	}
	return remaining, nil
}

func (s *Server) setTerminating(ctx context.Context, name, reason, message string) {
	_, err := s.updateObject(ctx, s.crdResource(), "", name, modeRaw, false, func(cur runtime.Object) (runtime.Object, error) {
		c := cur.(*apiextensionsv1.CustomResourceDefinition)
		setCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating,
			Status: apiextensionsv1.ConditionTrue, Reason: reason, Message: message}, metav1.NewTime(s.clock.Now()))
		return c, nil
	})
	if err != nil && !apierrors.IsNotFound(err) {
		s.log.Warn("set CRD terminating", "name", name, "err", err)
	}
}
