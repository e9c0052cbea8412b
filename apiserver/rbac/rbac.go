// Package rbac decides requests from rbac.authorization.k8s.io/v1 Roles,
// ClusterRoles and their bindings, as kube-apiserver's RBAC authorizer does
// (members of system:masters are allowed everything), and holds the
// bootstrap roles a new cluster starts with.
package rbac

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// GroupMasters is kube-apiserver's superuser group.
const GroupMasters = "system:masters"

// Source reads the RBAC objects a decision needs.
type Source interface {
	ClusterRoleBindings(ctx context.Context) ([]*rbacv1.ClusterRoleBinding, error)
	RoleBindings(ctx context.Context, namespace string) ([]*rbacv1.RoleBinding, error)
	ClusterRole(ctx context.Context, name string) (*rbacv1.ClusterRole, error)
	Role(ctx context.Context, namespace, name string) (*rbacv1.Role, error)
}

// Authorizer evaluates RBAC rules read from a Source.
type Authorizer struct{ src Source }

// New returns an Authorizer over src.
func New(src Source) *Authorizer { return &Authorizer{src: src} }

// subject is who a request is from.
type subject struct {
	name   string
	groups []string
}

func subjectOf(user string, groups []string) subject { return subject{name: user, groups: groups} }

// grant is one bound rule set and where it came from.
type grant struct {
	rules  []rbacv1.PolicyRule
	source string
}

// Authorize allows a request when a rule of a role bound to its user
// allows it; the reason names the binding, as upstream's does.
func (a *Authorizer) Authorize(ctx context.Context, attrs authorizationv1.SubjectAccessReviewSpec) (bool, string, error) {
	if slices.Contains(attrs.Groups, GroupMasters) {
		return true, "", nil
	}
	namespace := ""
	if ra := attrs.ResourceAttributes; ra != nil {
		namespace = ra.Namespace
	}
	grants, err := a.grantsFor(ctx, subjectOf(attrs.User, attrs.Groups), namespace)
	for _, g := range grants {
		for i := range g.rules {
			if allows(attrs, &g.rules[i]) {
				return true, "RBAC: allowed by " + g.source, nil
			}
		}
	}
	// As upstream, what could not be read (a binding's missing role) is
	// the reason of a denial, not an error of the request.
	if err != nil {
		return false, "RBAC: " + err.Error(), nil
	}
	return false, "", nil
}

// RulesFor lists the rules bound to user in namespace (cluster-wide ones
// included), as SelfSubjectRulesReview reports them.
func (a *Authorizer) RulesFor(ctx context.Context, user authenticationv1.UserInfo, namespace string) authorizationv1.SubjectRulesReviewStatus {
	if slices.Contains(user.Groups, GroupMasters) {
		all := []string{"*"}
		return authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    []authorizationv1.ResourceRule{{Verbs: all, APIGroups: all, Resources: all}},
			NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: all, NonResourceURLs: all}},
		}
	}
	grants, err := a.grantsFor(ctx, subjectOf(user.Username, user.Groups), namespace)
	var out authorizationv1.SubjectRulesReviewStatus
	for _, g := range grants {
		for _, r := range g.rules {
			if len(r.NonResourceURLs) > 0 {
				out.NonResourceRules = append(out.NonResourceRules, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
				continue
			}
			out.ResourceRules = append(out.ResourceRules, authorizationv1.ResourceRule{Verbs: r.Verbs, APIGroups: r.APIGroups,
				Resources: r.Resources, ResourceNames: r.ResourceNames})
		}
	}
	if err != nil {
		out.Incomplete, out.EvaluationError = true, err.Error()
	}
	return out
}

// grantsFor collects the rules of every ClusterRoleBinding and, for a
// namespaced request, every RoleBinding of namespace that names s. A
// binding to a missing role grants nothing; errors (such as that role's
// absence) are returned beside what could be read.
func (a *Authorizer) grantsFor(ctx context.Context, s subject, namespace string) ([]grant, error) {
	var out []grant
	var errs []error
	crbs, err := a.src.ClusterRoleBindings(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	for _, b := range crbs {
		sub := matchingSubject(b.Subjects, s, "")
		if sub == nil || b.RoleRef.Kind != "ClusterRole" {
			continue
		}
		role, err := a.src.ClusterRole(ctx, b.RoleRef.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, grant{rules: role.Rules, source: fmt.Sprintf("ClusterRoleBinding %q of ClusterRole %q to %s", b.Name, b.RoleRef.Name, describeSubject(sub, ""))})
	}
	if namespace != "" {
		rbs, err := a.src.RoleBindings(ctx, namespace)
		if err != nil {
			errs = append(errs, err)
		}
		for _, b := range rbs {
			sub := matchingSubject(b.Subjects, s, namespace)
			if sub == nil {
				continue
			}
			rules, err := a.roleRules(ctx, namespace, b.RoleRef)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, grant{rules: rules, source: fmt.Sprintf("RoleBinding %q of %s %q to %s", b.Name+"/"+namespace, b.RoleRef.Kind, b.RoleRef.Name, describeSubject(sub, namespace))})
		}
	}
	return out, utilerrors.NewAggregate(errs)
}

func (a *Authorizer) roleRules(ctx context.Context, namespace string, ref rbacv1.RoleRef) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		r, err := a.src.Role(ctx, namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	case "ClusterRole":
		r, err := a.src.ClusterRole(ctx, ref.Name)
		if err != nil {
			return nil, err
		}
		return r.Rules, nil
	}
	return nil, fmt.Errorf("unknown role kind %q", ref.Kind)
}

// matchingSubject is the first of subjects that names s; a ServiceAccount
// subject without a namespace is in the binding's.
func matchingSubject(subjects []rbacv1.Subject, s subject, bindingNamespace string) *rbacv1.Subject {
	for i := range subjects {
		sub := &subjects[i]
		switch sub.Kind {
		case rbacv1.UserKind:
			if sub.Name == s.name {
				return sub
			}
		case rbacv1.GroupKind:
			if slices.Contains(s.groups, sub.Name) {
				return sub
			}
		case rbacv1.ServiceAccountKind:
			ns := sub.Namespace
			if ns == "" {
				ns = bindingNamespace
			}
			if ns != "" && s.name == "system:serviceaccount:"+ns+":"+sub.Name {
				return sub
			}
		}
	}
	return nil
}

func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

// allows reports whether rule allows the request attrs describes.
func allows(attrs authorizationv1.SubjectAccessReviewSpec, rule *rbacv1.PolicyRule) bool {
	if ra := attrs.ResourceAttributes; ra != nil {
		resource := ra.Resource
		if ra.Subresource != "" {
			resource += "/" + ra.Subresource
		}
		return matches(rule.Verbs, ra.Verb) && matches(rule.APIGroups, ra.Group) &&
			resourceMatches(rule.Resources, resource, ra.Subresource) &&
			(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, ra.Name))
	}
	if nra := attrs.NonResourceAttributes; nra != nil {
		return matches(rule.Verbs, nra.Verb) && urlMatches(rule.NonResourceURLs, nra.Path)
	}
	return false
}

func matches(list []string, v string) bool {
	return slices.Contains(list, rbacv1.VerbAll) || slices.Contains(list, v)
}

// resourceMatches: "*" is every resource and subresource, "*/log" the log
// subresource of any resource, and "pods/log" exactly that.
func resourceMatches(rules []string, resource, subresource string) bool {
	for _, r := range rules {
		if r == rbacv1.ResourceAll || r == resource || (subresource != "" && r == "*/"+subresource) {
			return true
		}
	}
	return false
}

// urlMatches: "*" is every URL and a trailing "*" a prefix.
func urlMatches(rules []string, path string) bool {
	for _, r := range rules {
		if r == rbacv1.NonResourceAll || r == path || (strings.HasSuffix(r, "*") && strings.HasPrefix(path, strings.TrimSuffix(r, "*"))) {
			return true
		}
	}
	return false
}
