package controllerctx

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
)

// An injected recorder records every controller's events and needs no
// broadcaster; without one each controller gets its own.
func TestEventRecorder(t *testing.T) {
	injected := record.NewFakeRecorder(1)
	rec, b := Context{Recorder: injected}.EventRecorder(scheme.Scheme, "job-controller")
	if rec != injected || b != nil {
		t.Errorf("with an injected recorder: got %T and broadcaster %v, want the injected one and none", rec, b)
	}
	StartEvents(b, nil)() // no broadcaster: nothing to start or stop

	rec, b = Context{}.EventRecorder(scheme.Scheme, "job-controller")
	if rec == nil || b == nil {
		t.Fatalf("without an injected recorder: recorder %v, broadcaster %v, want both", rec, b)
	}
	StartEvents(b, fake.NewClientset())()
}

type runner struct{ opts string }

func (runner) Run(context.Context, int) error { return nil }

func TestInitAdapters(t *testing.T) {
	errBuild := errors.New("no informer")
	tests := map[string]struct {
		init    InitFunc
		want    Controller
		wantErr error
	}{
		"Init":          {init: Init(func(Context) (*runner, error) { return &runner{}, nil }), want: &runner{}},
		"InitWith":      {init: InitWith(func(_ Context, o string) (*runner, error) { return &runner{opts: o}, nil }, "x"), want: &runner{opts: "x"}},
		"error crosses": {init: Init(func(Context) (*runner, error) { return nil, errBuild }), wantErr: errBuild},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := tc.init(Context{})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if tc.want == nil && got != nil {
				t.Errorf("built %#v with an error, want nil", got)
			}
			if tc.want != nil && *got.(*runner) != *tc.want.(*runner) {
				t.Errorf("built %+v, want %+v", got, tc.want)
			}
		})
	}
}
