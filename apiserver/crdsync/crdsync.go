// Package crdsync does what kube-apiserver's CustomResourceDefinition
// controllers do (naming, establishing, finalizing), in one pass over all
// CRDs: it accepts each CRD's names (NamesAccepted, Established), serves
// the established ones by putting their resources in the registry.Table,
// deletes the objects of a terminating CRD before dropping its cleanup
// finalizer, and forgets deleted CRDs.
//
// It is a loop outside the request path over a narrow Store; the server
// also runs a pass (Sync) right after each CRD write, so names,
// conditions and serving follow at once.
package crdsync

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/batchlet/batchlet/apiserver/registry"
	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
)

// BuiltinCRD names the CRD of the built-in JobSet resource: batchlet
// serves jobsets itself (typed, with its own validation) and reports this
// CRD, created at start from install/'s generated manifest, as
// established. Applying it updates the stored CRD and keeps the built-in
// serving.
const BuiltinCRD = "jobsets.jobset.x-k8s.io"

// Store is what the loop needs from the API server.
type Store interface {
	// CRDs lists every CRD; the loop only reads them (they may be shared).
	CRDs(ctx context.Context) ([]*apiextensionsv1.CustomResourceDefinition, error)
	// UpdateCRD applies mutate to the stored CRD named name, past its
	// strategy, and returns what was stored.
	UpdateCRD(ctx context.Context, name string, mutate func(*apiextensionsv1.CustomResourceDefinition)) (*apiextensionsv1.CustomResourceDefinition, error)
	// Objects lists the objects of res in namespace ("" for all).
	Objects(ctx context.Context, res *registry.Resource, namespace string) ([]metav1.Object, error)
	// Delete deletes an object with background propagation; gone is false
	// when it stays for now (finalizers, graceful deletion).
	Delete(ctx context.Context, res *registry.Resource, namespace, name string) (gone bool, err error)
}

// Loop syncs the CRDs with what is served.
type Loop struct {
	store    Store
	served   *registry.Table
	interval time.Duration
	clock    clock.Clock
	log      *slog.Logger
	// mu serialises passes (names, conditions, serving, cleanup).
	mu sync.Mutex
}

// New returns a loop over store serving established CRDs in served and
// passing again every interval.
func New(store Store, served *registry.Table, interval time.Duration, clk clock.Clock, log *slog.Logger) *Loop {
	return &Loop{store: store, served: served, interval: interval, clock: clk, log: log}
}

// Run re-syncs the CRDs every interval until ctx ends: a terminating CRD
// whose objects were still finalizing is finished on a later pass.
func (l *Loop) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.clock.After(l.interval):
		}
		l.Sync(ctx)
	}
}

// EstablishedStatus is the status of a CRD the server creates itself at
// start, when nothing else is served in its group yet: every name
// accepted, established, stored at its storage version.
func EstablishedStatus(crd *apiextensionsv1.CustomResourceDefinition, now metav1.Time) apiextensionsv1.CustomResourceDefinitionStatus {
	names, accepted, established := acceptNames(crd, crdNames{resources: sets.New[string](), kinds: sets.New[string]()}, now)
	status := apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: names,
		Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{accepted, established}}
	if v, err := apihelpers.GetCRDStorageVersion(crd); err == nil {
		status.StoredVersions = []string{v}
	}
	return status
}

// Sync is one pass over all CRDs: accept names (NamesAccepted,
// Established), serve the established ones, clean up and forget deleted
// ones.
func (l *Loop) Sync(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	crds, err := l.store.CRDs(ctx)
	if err != nil {
		l.log.Warn("list CRDs", "err", err)
		return
	}
	// The oldest CRD keeps a contested name, as upstream where it was
	// accepted first.
	sort.SliceStable(crds, func(i, j int) bool {
		return crds[i].CreationTimestamp.Before(&crds[j].CreationTimestamp)
	})
	alive := map[string]bool{}
	for _, crd := range crds {
		if crd.DeletionTimestamp != nil {
			if l.finishCRD(ctx, crd) {
				continue
			}
			alive[crd.Name] = true
			continue
		}
		alive[crd.Name] = true
		if err := l.syncCRD(ctx, crd, crds); err != nil {
			l.log.Warn("sync CRD", "name", crd.Name, "err", err)
		}
	}
	for name := range l.served.Definitions() {
		if !alive[name] {
			l.served.SetDefinition(name, "", nil)
		}
	}
}

// syncCRD accepts the names of one CRD, records its conditions and serves it.
func (l *Loop) syncCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, all []*apiextensionsv1.CustomResourceDefinition) error {
	taken := l.takenNames(crd, all)
	now := metav1.NewTime(l.clock.Now())
	names, accepted, established := acceptNames(crd, taken, now)
	want := &apiextensionsv1.CustomResourceDefinition{Status: *crd.Status.DeepCopy()}
	want.Status.AcceptedNames = names
	setCRDCondition(want, accepted, now)
	setCRDCondition(want, established, now)
	if !equalCRDStatus(crd, want) {
		out, err := l.store.UpdateCRD(ctx, crd.Name, func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Status.AcceptedNames = names
			setCRDCondition(c, accepted, now)
			setCRDCondition(c, established, now)
		})
		if err != nil {
			return fmt.Errorf("update status: %w", err)
		}
		crd = out
	}
	if crd.Name == BuiltinCRD || !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		return nil
	}
	if l.served.ServedFrom(crd.Name) == crd.ResourceVersion {
		return nil // schemas and CEL rules compiled already
	}
	rs, err := registry.CustomResources(crd)
	if err != nil {
		return err
	}
	l.served.SetDefinition(crd.Name, crd.ResourceVersion, rs)
	return nil
}

// takenNames are the resource and kind names of crd's group used by the
// built-in resources and by the other CRDs' accepted names.
func (l *Loop) takenNames(crd *apiextensionsv1.CustomResourceDefinition, all []*apiextensionsv1.CustomResourceDefinition) crdNames {
	taken := crdNames{resources: sets.New[string](), kinds: sets.New[string]()}
	for _, r := range l.served.List() {
		if r.CustomResource || r.GVR.Group != crd.Spec.Group {
			continue
		}
		if crd.Name == BuiltinCRD && r.GVR.Resource+"."+r.GVR.Group == BuiltinCRD {
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
func (l *Loop) finishCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) bool {
	var res *registry.Resource
	for _, r := range l.served.List() {
		if r.CustomResource && r.Definition == crd.Name {
			res = r
			break
		}
	}
	remaining := 0
	if res != nil {
		l.served.SetTerminating(crd.Name)
		n, err := l.deleteAllOf(ctx, res)
		if err != nil {
			l.log.Warn("delete custom resources", "name", crd.Name, "err", err)
			return false
		}
		remaining = n
	}
	if remaining > 0 {
		l.setTerminating(ctx, crd.Name, "InstanceDeletionInProgress", "CustomResource deletion is in progress")
		return false
	}
	l.served.SetDefinition(crd.Name, "", nil)
	if !apihelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		return true
	}
	_, err := l.store.UpdateCRD(ctx, crd.Name, func(c *apiextensionsv1.CustomResourceDefinition) {
		setCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating,
			Status: apiextensionsv1.ConditionFalse, Reason: "InstanceDeletionCompleted", Message: "removed all instances"}, metav1.NewTime(l.clock.Now()))
		apihelpers.CRDRemoveFinalizer(c, apiextensionsv1.CustomResourceCleanupFinalizer)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		l.log.Warn("remove CRD cleanup finalizer", "name", crd.Name, "err", err)
	}
	return true
}

// deleteAllOf deletes every object of res in all namespaces and returns
// how many are still there (finalizing).
func (l *Loop) deleteAllOf(ctx context.Context, res *registry.Resource) (int, error) {
	objs, err := l.store.Objects(ctx, res, "")
	if err != nil {
		return 0, fmt.Errorf("list %s: %w", res.GVR.Resource, err)
	}
	remaining := 0
	for _, m := range objs {
		if m.GetDeletionTimestamp() != nil {
			remaining++
			continue
		}
		deleted, err := l.store.Delete(ctx, res, m.GetNamespace(), m.GetName())
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, fmt.Errorf("delete %s %s/%s: %w", res.GVR.Resource, m.GetNamespace(), m.GetName(), err)
		}
		if err == nil && !deleted {
			remaining++
		}
	}
	return remaining, nil
}

func (l *Loop) setTerminating(ctx context.Context, name, reason, message string) {
	_, err := l.store.UpdateCRD(ctx, name, func(c *apiextensionsv1.CustomResourceDefinition) {
		setCRDCondition(c, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating,
			Status: apiextensionsv1.ConditionTrue, Reason: reason, Message: message}, metav1.NewTime(l.clock.Now()))
	})
	if err != nil && !apierrors.IsNotFound(err) {
		l.log.Warn("set CRD terminating", "name", name, "err", err)
	}
}
