package query

import (
	"net/url"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestBoolMatchesParameterCodec compares Bool with the ListOptions decoding
// kube-apiserver does through its parameter codec.
func TestBoolMatchesParameterCodec(t *testing.T) {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, metav1.SchemeGroupVersion)
	codec := runtime.NewParameterCodec(scheme)
	cases := []struct {
		raw  string
		want *bool
	}{
		{"", nil},
		{"watch=true", ptr(true)},
		{"watch=True", ptr(true)},
		{"watch=TRUE", ptr(true)},
		{"watch=1", ptr(true)},
		{"watch=yes", ptr(true)},
		{"watch=", ptr(true)},
		{"watch=false", ptr(false)},
		{"watch=False", ptr(false)},
		{"watch=FALSE", ptr(false)},
		{"watch=0", ptr(false)},
		{"watch=0&watch=1", ptr(false)},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			q, err := url.ParseQuery(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			got := OptionalBool(q, "watch")
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("OptionalBool = %v, want %v", show(got), show(tc.want))
			}
			var opts metav1.ListOptions
			if err := codec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err != nil {
				t.Fatal(err)
			}
			if Bool(q, "watch") != opts.Watch {
				t.Errorf("Bool = %v, apimachinery's ListOptions.Watch = %v", Bool(q, "watch"), opts.Watch)
			}
		})
	}
}

func ptr(b bool) *bool { return &b }

func show(b *bool) string {
	if b == nil {
		return "nil"
	}
	if *b {
		return "true"
	}
	return "false"
}
