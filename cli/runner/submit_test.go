package runner

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// strictRefusal is what the API server answers to an unknown field under
// fieldValidation=Strict.
var strictRefusal = apierrors.NewBadRequest(`Job in version "v1" cannot be handled as a Job: strict decoding error: unknown field "spec.completionz"`)

func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	m.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	m.Add(JobGVK, meta.RESTScopeNamespace)
	return m
}

// creates lists the create calls a fake client saw as "dry|real kind/ns/name".
func creates(actions []k8stesting.Action) []string {
	var out []string
	for _, a := range actions {
		c, ok := a.(k8stesting.CreateActionImpl)
		if !ok {
			continue
		}
		mode := "real"
		if len(c.CreateOptions.DryRun) > 0 {
			mode = "dry"
		}
		if c.CreateOptions.FieldValidation != metav1.FieldValidationStrict {
			mode += "(not strict)"
		}
		obj := c.Object.(metav1.Object)
		out = append(out, mode+" "+c.Resource.Resource+"/"+c.Namespace+"/"+obj.GetName())
	}
	return out
}

func TestSubmit(t *testing.T) {
	const cmAndJob = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {completionz: 3}\n"
	const nsAndJob = "apiVersion: v1\nkind: Namespace\nmetadata: {name: new}\n---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: new}\n"
	cases := []struct {
		name     string
		manifest string
		refuse   func(k8stesting.CreateActionImpl) error
		want     []string
		wantErr  string
	}{
		{
			name:     "every object is dry-run strictly before any is created",
			manifest: cmAndJob,
			want:     []string{"dry configmaps/default/cm", "dry jobs/default/j", "real configmaps/default/cm", "real jobs/default/j"},
		},
		{
			name:     "an unknown field in the second document creates nothing",
			manifest: cmAndJob,
			refuse: func(c k8stesting.CreateActionImpl) error {
				if c.Resource.Resource == "jobs" {
					return strictRefusal
				}
				return nil
			},
			want:    []string{"dry configmaps/default/cm", "dry jobs/default/j"},
			wantErr: `Error from server (BadRequest): error when creating "m.yaml": Job in version "v1" cannot be handled as a Job: strict decoding error: unknown field "spec.completionz"`,
		},
		{
			name:     "a refusal after the dry run deletes what was created",
			manifest: cmAndJob,
			refuse: func(c k8stesting.CreateActionImpl) error {
				if c.Resource.Resource == "jobs" && len(c.CreateOptions.DryRun) == 0 {
					return apierrors.NewAlreadyExists(schema.GroupResource{Group: "batch", Resource: "jobs"}, "j")
				}
				return nil
			},
			want:    []string{"dry configmaps/default/cm", "dry jobs/default/j", "real configmaps/default/cm", "real jobs/default/j"},
			wantErr: `Error from server (AlreadyExists): error when creating "m.yaml": jobs.batch "j" already exists`,
		},
		{
			name:     "objects in a namespace the manifest creates are not dry-run",
			manifest: nsAndJob,
			want:     []string{"dry namespaces//new", "real namespaces//new", "real jobs/new/j"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
			// The fake tracker ignores dryRun: answer dry runs without storing.
			dyn.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				c := a.(k8stesting.CreateActionImpl)
				return len(c.CreateOptions.DryRun) > 0, c.Object, nil
			})
			if tc.refuse != nil {
				dyn.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if err := tc.refuse(a.(k8stesting.CreateActionImpl)); err != nil {
						return true, nil, err
					}
					return false, nil, nil
				})
			}
			objs, err := ParseManifest(strings.NewReader(tc.manifest))
			if err != nil {
				t.Fatal(err)
			}
			_, err = submit(t.Context(), dyn, testMapper(), objs, "default", "m.yaml")
			if got := creates(dyn.Actions()); strings.Join(got, ", ") != strings.Join(tc.want, ", ") {
				t.Errorf("creates:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("submit: %v", err)
				}
				return
			}
			var inErr *InputError
			if !errors.As(err, &inErr) || err.Error() != tc.wantErr {
				t.Fatalf("err = %v (%T)\nwant input error %s", err, err, tc.wantErr)
			}
			if tc.name == "a refusal after the dry run deletes what was created" {
				if _, getErr := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default").Get(t.Context(), "cm", metav1.GetOptions{}); !apierrors.IsNotFound(getErr) {
					t.Errorf("configmap left behind: %v", getErr)
				}
			}
		})
	}
}
