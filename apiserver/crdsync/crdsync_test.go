package crdsync

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

func crdNamed(name, group, plural, kind string, accepted bool) *apiextensionsv1.CustomResourceDefinition {
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
	crd.Spec.Group = group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"}
	if accepted {
		crd.Status.AcceptedNames = crd.Spec.Names
	}
	return crd
}

func TestAcceptNames(t *testing.T) {
	taken := crdNames{resources: sets.New("jobs", "job", "cj"), kinds: sets.New("Job", "JobList")}
	cases := []struct {
		name                 string
		crd                  *apiextensionsv1.CustomResourceDefinition
		wantStatus           apiextensionsv1.ConditionStatus
		wantReason, wantMsg  string
		wantEstablished      apiextensionsv1.ConditionStatus
		wantEstablishedWhy   string
		wantPlural, wantKind string
	}{
		{name: "fresh names", crd: crdNamed("widgets.g", "g", "widgets", "Widget", false),
			wantStatus: "True", wantReason: "NoConflicts", wantMsg: "no conflicts found",
			wantEstablished: "True", wantEstablishedWhy: "InitialNamesAccepted", wantPlural: "widgets", wantKind: "Widget"},
		{name: "plural taken", crd: crdNamed("jobs.g", "g", "jobs", "Widget", false),
			wantStatus: "False", wantReason: "PluralConflict", wantMsg: `"jobs" is already in use`,
			wantEstablished: "False", wantEstablishedWhy: "NotAccepted", wantPlural: "", wantKind: "Widget"},
		{name: "kind taken", crd: crdNamed("widgets.g", "g", "widgets", "Job", false),
			wantStatus: "False", wantReason: "ListKindConflict", wantMsg: `"JobList" is already in use`,
			wantEstablished: "False", wantEstablishedWhy: "NotAccepted", wantPlural: "widgets", wantKind: ""},
		{name: "already ours", crd: crdNamed("jobs.g", "g", "jobs", "Job", true),
			wantStatus: "True", wantReason: "NoConflicts", wantMsg: "no conflicts found",
			wantEstablished: "True", wantEstablishedWhy: "InitialNamesAccepted", wantPlural: "jobs", wantKind: "Job"},
	}
	now := metav1.Now()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			names, accepted, established := acceptNames(tc.crd, taken, now)
			if accepted.Status != tc.wantStatus || accepted.Reason != tc.wantReason || accepted.Message != tc.wantMsg {
				t.Errorf("NamesAccepted = %s %s %q, want %s %s %q", accepted.Status, accepted.Reason, accepted.Message, tc.wantStatus, tc.wantReason, tc.wantMsg)
			}
			if established.Status != tc.wantEstablished || established.Reason != tc.wantEstablishedWhy {
				t.Errorf("Established = %s %s, want %s %s", established.Status, established.Reason, tc.wantEstablished, tc.wantEstablishedWhy)
			}
			if names.Plural != tc.wantPlural || names.Kind != tc.wantKind {
				t.Errorf("accepted names = %s/%s, want %s/%s", names.Plural, names.Kind, tc.wantPlural, tc.wantKind)
			}
		})
	}
}
