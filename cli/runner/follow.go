package runner

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Follow shows an existing Job or JobSet (resource names which) until it
// has finished or ctx ends, as Run shows what it created, and deletes
// nothing. Result.ExitCode is ExitComplete, ExitFailed (failed or deleted
// before it finished) or ExitInterrupted; an object that cannot be read is
// an error.
func Follow(ctx context.Context, opts Options, resource schema.GroupVersionResource, name string) (*Result, error) {
	opts = opts.withDefaults()
	start := opts.Now()
	clients, err := newClients(opts.Config)
	if err != nil {
		return nil, err
	}
	obj, err := clients.dyn.Resource(resource).Namespace(opts.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s %s/%s: %w", resource.Resource, opts.Namespace, name, err)
	}
	mapping := &meta.RESTMapping{Resource: resource, GroupVersionKind: obj.GroupVersionKind(), Scope: meta.RESTScopeNamespace}
	f := newFollower(opts, clients, []submitted{{obj: obj, mapping: mapping}})
	items, interrupted := f.follow(ctx)
	res := &Result{Items: items, Elapsed: opts.Now().Sub(start)}
	switch {
	case interrupted:
		res.ExitCode = ExitInterrupted
	case anyFailed(items):
		res.ExitCode = ExitFailed
	}
	return res, nil
}
