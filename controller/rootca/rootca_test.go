package rootca

import (
	"context"
	"github.com/batchlet/batchlet/controller/controllerctx"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

const ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func namespace(name string, phase corev1.NamespacePhase) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NamespaceStatus{Phase: phase}}
}

func published(ns string, data map[string]string, annotations map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: ns, Annotations: annotations}, Data: data}
}

var described = map[string]string{DescriptionAnnotation: Description}

func TestDecide(t *testing.T) {
	now := metav1.Now()
	deleting := namespace("gone", corev1.NamespaceActive)
	deleting.DeletionTimestamp = &now
	cases := map[string]struct {
		ns      *corev1.Namespace
		cm      *corev1.ConfigMap
		want    action
		wantObj *corev1.ConfigMap
	}{
		"missing in an active namespace": {ns: namespace("a", corev1.NamespaceActive),
			want: actionCreate, wantObj: published("a", map[string]string{DataKey: ca}, described)},
		"already right": {ns: namespace("a", corev1.NamespaceActive),
			cm: published("a", map[string]string{DataKey: ca}, described), want: actionNone},
		"terminating namespace":  {ns: namespace("a", corev1.NamespaceTerminating), want: actionNone},
		"namespace being delete": {ns: deleting, want: actionNone},
		"no namespace":           {want: actionNone},
		"edited data": {ns: namespace("a", corev1.NamespaceActive),
			cm:   published("a", map[string]string{DataKey: "x", "extra": "y"}, described),
			want: actionUpdate, wantObj: published("a", map[string]string{DataKey: ca}, described)},
		"annotation removed, other annotations kept": {ns: namespace("a", corev1.NamespaceActive),
			cm:   published("a", map[string]string{DataKey: ca}, map[string]string{"mine": "1"}),
			want: actionUpdate, wantObj: published("a", map[string]string{DataKey: ca}, map[string]string{"mine": "1", DescriptionAnnotation: Description})},
		"edited annotation is left alone": {ns: namespace("a", corev1.NamespaceActive),
			cm: published("a", map[string]string{DataKey: ca}, map[string]string{DescriptionAnnotation: "mine"}), want: actionNone},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, obj := decide(tc.ns, tc.cm, ca)
			if got != tc.want || !reflect.DeepEqual(obj, tc.wantObj) {
				t.Errorf("decide = %v, %+v; want %v, %+v", got, obj, tc.want, tc.wantObj)
			}
		})
	}
}

// TestSyncCreatesAndRestoresEdited drives sync over a fake clientset: the
// ConfigMap is created, then put back after an edit.
func TestSyncCreatesAndRestoresEdited(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(namespace("team", corev1.NamespaceActive))
	factory := informers.NewSharedInformerFactory(client, 0)
	c, err := New(controllerctx.Context{Client: client, Informers: factory, RootCA: []byte(ca)})
	if err != nil {
		t.Fatal(err)
	}
	nsStore := factory.Core().V1().Namespaces().Informer().GetStore()
	if err := nsStore.Add(namespace("team", corev1.NamespaceActive)); err != nil {
		t.Fatal(err)
	}
	cmStore := c.cmFactory.Core().V1().ConfigMaps().Informer().GetStore()

	if err := c.sync(ctx, "team"); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	got, err := client.CoreV1().ConfigMaps("team").Get(ctx, ConfigMapName, metav1.GetOptions{})
	if err != nil || got.Data[DataKey] != ca || got.Annotations[DescriptionAnnotation] != Description {
		t.Fatalf("after create: %+v, %v", got, err)
	}

	edited := got.DeepCopy()
	edited.Data[DataKey] = "tampered"
	if _, err := client.CoreV1().ConfigMaps("team").Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cmStore.Add(edited); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "team"); err != nil {
		t.Fatalf("sync after edit: %v", err)
	}
	if got, _ := client.CoreV1().ConfigMaps("team").Get(ctx, ConfigMapName, metav1.GetOptions{}); got.Data[DataKey] != ca {
		t.Errorf("after edit, ca.crt = %q, want the CA", got.Data[DataKey])
	}
}
