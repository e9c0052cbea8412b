package registry

import (
	"fmt"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Roles is rbac.authorization.k8s.io/v1 roles.
func Roles() *Resource {
	return &Resource{
		GVR: rbacv1.SchemeGroupVersion.WithResource("roles"), Kind: "Role", Singular: "role", Namespaced: true,
		New:     func() runtime.Object { return &rbacv1.Role{} },
		NewList: func() runtime.Object { return &rbacv1.RoleList{} },
		Validate: func(obj runtime.Object) field.ErrorList {
			r := obj.(*rbacv1.Role)
			return append(rbacMetaErrors(&r.ObjectMeta, true), validateRules(r.Rules, true)...)
		},
		ValidateChecksMeta: true,
		ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList {
			return validateRules(obj.(*rbacv1.Role).Rules, true)
		},
		Columns: []metav1.TableColumnDefinition{nameColumn(), createdAtColumn()},
		Row: func(obj runtime.Object, _ time.Time) metav1.TableRow {
			r := obj.(*rbacv1.Role)
			return metav1.TableRow{Cells: []interface{}{r.Name, createdAt(r.CreationTimestamp)}}
		},
	}
}

// ClusterRoles is rbac.authorization.k8s.io/v1 clusterroles.
func ClusterRoles() *Resource {
	return &Resource{
		GVR: rbacv1.SchemeGroupVersion.WithResource("clusterroles"), Kind: "ClusterRole", Singular: "clusterrole",
		New:     func() runtime.Object { return &rbacv1.ClusterRole{} },
		NewList: func() runtime.Object { return &rbacv1.ClusterRoleList{} },
		Validate: func(obj runtime.Object) field.ErrorList {
			r := obj.(*rbacv1.ClusterRole)
			return append(rbacMetaErrors(&r.ObjectMeta, false), validateRules(r.Rules, false)...)
		},
		ValidateChecksMeta: true,
		ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList {
			return validateRules(obj.(*rbacv1.ClusterRole).Rules, false)
		},
		Columns: []metav1.TableColumnDefinition{nameColumn(), createdAtColumn()},
		Row: func(obj runtime.Object, _ time.Time) metav1.TableRow {
			r := obj.(*rbacv1.ClusterRole)
			return metav1.TableRow{Cells: []interface{}{r.Name, createdAt(r.CreationTimestamp)}}
		},
	}
}

// RoleBindings is rbac.authorization.k8s.io/v1 rolebindings.
func RoleBindings() *Resource {
	return &Resource{
		GVR: rbacv1.SchemeGroupVersion.WithResource("rolebindings"), Kind: "RoleBinding", Singular: "rolebinding", Namespaced: true,
		New:     func() runtime.Object { return &rbacv1.RoleBinding{} },
		NewList: func() runtime.Object { return &rbacv1.RoleBindingList{} },
		PrepareForCreate: func(obj runtime.Object) {
			b := obj.(*rbacv1.RoleBinding)
			defaultBinding(&b.RoleRef, b.Subjects)
		},
		PrepareForUpdate: func(obj, _ runtime.Object) {
			b := obj.(*rbacv1.RoleBinding)
			defaultBinding(&b.RoleRef, b.Subjects)
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			b := obj.(*rbacv1.RoleBinding)
			return append(rbacMetaErrors(&b.ObjectMeta, true), validateBinding(b.RoleRef, b.Subjects, true)...)
		},
		ValidateChecksMeta: true,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			b, o := obj.(*rbacv1.RoleBinding), old.(*rbacv1.RoleBinding)
			return append(validateRoleRefUnchanged(b.RoleRef, o.RoleRef), validateBinding(b.RoleRef, b.Subjects, true)...)
		},
		Columns: bindingColumns(),
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			b := obj.(*rbacv1.RoleBinding)
			return bindingRow(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp, now)
		},
	}
}

// ClusterRoleBindings is rbac.authorization.k8s.io/v1 clusterrolebindings.
func ClusterRoleBindings() *Resource {
	return &Resource{
		GVR: rbacv1.SchemeGroupVersion.WithResource("clusterrolebindings"), Kind: "ClusterRoleBinding", Singular: "clusterrolebinding",
		New:     func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
		NewList: func() runtime.Object { return &rbacv1.ClusterRoleBindingList{} },
		PrepareForCreate: func(obj runtime.Object) {
			b := obj.(*rbacv1.ClusterRoleBinding)
			defaultBinding(&b.RoleRef, b.Subjects)
		},
		PrepareForUpdate: func(obj, _ runtime.Object) {
			b := obj.(*rbacv1.ClusterRoleBinding)
			defaultBinding(&b.RoleRef, b.Subjects)
		},
		Validate: func(obj runtime.Object) field.ErrorList {
			b := obj.(*rbacv1.ClusterRoleBinding)
			return append(rbacMetaErrors(&b.ObjectMeta, false), validateBinding(b.RoleRef, b.Subjects, false)...)
		},
		ValidateChecksMeta: true,
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			b, o := obj.(*rbacv1.ClusterRoleBinding), old.(*rbacv1.ClusterRoleBinding)
			return append(validateRoleRefUnchanged(b.RoleRef, o.RoleRef), validateBinding(b.RoleRef, b.Subjects, false)...)
		},
		Columns: bindingColumns(),
		Row: func(obj runtime.Object, now time.Time) metav1.TableRow {
			b := obj.(*rbacv1.ClusterRoleBinding)
			return bindingRow(b.Name, b.RoleRef, b.Subjects, b.CreationTimestamp, now)
		},
	}
}

// rbacMetaErrors: RBAC names are path segments ("system:discovery"), not
// DNS subdomains.
func rbacMetaErrors(om *metav1.ObjectMeta, namespaced bool) field.ErrorList {
	return apivalidation.ValidateObjectMeta(om, namespaced, pathSegmentName, field.NewPath("metadata"))
}

// pathSegmentName is upstream's name rule for RBAC objects: any name
// usable as one URL path segment (generateName prefixes may be "." or "..").
func pathSegmentName(name string, prefix bool) []string {
	if !prefix && (name == "." || name == "..") {
		return []string{fmt.Sprintf("may not be '%s'", name)}
	}
	var errs []string
	for _, bad := range []string{"/", "%"} {
		if strings.Contains(name, bad) {
			errs = append(errs, fmt.Sprintf("may not contain '%s'", bad))
		}
	}
	return errs
}

// validateRules is upstream's ValidatePolicyRule over every rule.
func validateRules(rules []rbacv1.PolicyRule, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	for i, rule := range rules {
		p := field.NewPath("rules").Index(i)
		if len(rule.Verbs) == 0 {
			errs = append(errs, field.Required(p.Child("verbs"), "verbs must contain at least one value"))
		}
		if len(rule.NonResourceURLs) > 0 {
			if namespaced {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
			}
			if len(rule.APIGroups) > 0 || len(rule.Resources) > 0 || len(rule.ResourceNames) > 0 {
				errs = append(errs, field.Invalid(p.Child("nonResourceURLs"), rule.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
			}
			continue
		}
		if len(rule.APIGroups) == 0 {
			errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
		}
		if len(rule.Resources) == 0 {
			errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
		}
	}
	return errs
}

// defaultBinding applies rbac/v1's defaults: roleRef and User/Group
// subjects in the RBAC group.
func defaultBinding(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		s := &subjects[i]
		if s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}

// validateBinding is upstream's roleRef and subject validation.
func validateBinding(ref rbacv1.RoleRef, subjects []rbacv1.Subject, namespaced bool) field.ErrorList {
	var errs field.ErrorList
	refPath := field.NewPath("roleRef")
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(refPath.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	kinds := []string{"ClusterRole"}
	if namespaced {
		kinds = []string{"Role", "ClusterRole"}
	}
	if !contains(kinds, ref.Kind) {
		errs = append(errs, field.NotSupported(refPath.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(refPath.Child("name"), ""))
	} else {
		for _, msg := range pathSegmentName(ref.Name, false) {
			errs = append(errs, field.Invalid(refPath.Child("name"), ref.Name, msg))
		}
	}
	for i, s := range subjects {
		errs = append(errs, validateSubject(s, namespaced, field.NewPath("subjects").Index(i))...)
	}
	return errs
}

func validateSubject(s rbacv1.Subject, namespaced bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.ValidateServiceAccountName(s.Name, false) {
				errs = append(errs, field.Invalid(p.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(p.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(p.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

func validateRoleRefUnchanged(ref, old rbacv1.RoleRef) field.ErrorList {
	if ref == old {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("roleRef"), ref, "cannot change roleRef")}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func createdAtColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Created At", Type: "date", Description: objectMetaDoc["creationTimestamp"]}
}

func createdAt(t metav1.Time) string { return t.UTC().Format(time.RFC3339) }

func bindingColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn(), col("Role", rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]), ageColumn(),
		wideCol("Users", "Users in the binding"), wideCol("Groups", "Groups in the binding"),
		wideCol("ServiceAccounts", "ServiceAccounts in the binding")}
}

// bindingRow is kubectl's binding row: ROLE as Kind/name, then the
// subjects by kind.
func bindingRow(name string, ref rbacv1.RoleRef, subjects []rbacv1.Subject, created metav1.Time, now time.Time) metav1.TableRow {
	var users, groups, sas []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		}
	}
	return metav1.TableRow{Cells: []interface{}{name, ref.Kind + "/" + ref.Name, since(created, now),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}}
}
