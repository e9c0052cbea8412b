package workqueue

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseSource(t *testing.T) {
	cases := []struct {
		in      string
		want    Source
		wantErr string
	}{
		{in: "configmap/items", want: Source{ConfigMap: "items"}},
		{in: "configmap/items/list.txt", want: Source{ConfigMap: "items", Key: "list.txt"}},
		{in: "items", wantErr: `annotation batchlet.dev/work-queue="items": want configmap/NAME (one item per key) or configmap/NAME/KEY (one item per line)`},
		{in: "secret/items", wantErr: "want configmap/NAME"},
		{in: "configmap/a/b/c", wantErr: "want configmap/NAME"},
		{in: "configmap/Items", wantErr: "ConfigMap name: a lowercase RFC 1123 subdomain"},
		{in: "configmap/items/a b", wantErr: "key: a valid config key"},
	}
	for _, tc := range cases {
		got, err := ParseSource(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseSource(%q) = %v, want error containing %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want || got.String() != tc.in {
			t.Errorf("ParseSource(%q) = %+v (%q), %v", tc.in, got, got.String(), err)
		}
	}
}

func TestSourceItems(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"},
		Data: map[string]string{"b": "second", "a": "first", "list": "one\r\n\n  \ntwo\nthree"}}
	cases := []struct {
		src     Source
		want    []string
		wantErr string
	}{
		{src: Source{ConfigMap: "cm"}, want: []string{"first", "second", "one\r\n\n  \ntwo\nthree"}},
		{src: Source{ConfigMap: "cm", Key: "list"}, want: []string{"one", "two", "three"}},
		{src: Source{ConfigMap: "cm", Key: "nope"}, wantErr: `ConfigMap ns/cm has no key "nope"`},
	}
	for _, tc := range cases {
		got, err := tc.src.Items(cm)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%v: err = %v, want %q", tc.src, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%v: items = %q, %v, want %q", tc.src, got, err, tc.want)
		}
	}
}
