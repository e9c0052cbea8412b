package nodeproxy

import (
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPickContainer(t *testing.T) {
	pod := func(containers, inits []string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c})
		}
		for _, c := range inits {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: c})
		}
		return p
	}
	for _, tc := range []struct {
		name, container string
		pod             *corev1.Pod
		want, wantErr   string
	}{
		{"only container", "", pod([]string{"a"}, nil), "a", ""},
		{"named container", "b", pod([]string{"a", "b"}, nil), "b", ""},
		{"named init container", "i", pod([]string{"a", "b"}, []string{"i"}), "i", ""},
		{"two containers, none named", "", pod([]string{"a", "b"}, nil), "",
			"a container name must be specified for pod p, choose one of: [a b]"},
		{"with init containers, none named", "", pod([]string{"a", "b"}, []string{"i"}), "",
			"a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [i]"},
		{"unknown container", "x", pod([]string{"a"}, nil), "", "container x is not valid for pod p"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pickContainer(tc.pod, tc.container)
			if gotErr := errString(err); gotErr != tc.wantErr || got != tc.want {
				t.Errorf("pickContainer = %q, %q; want %q, %q", got, gotErr, tc.want, tc.wantErr)
			}
		})
	}
}

func TestLogError(t *testing.T) {
	for _, tc := range []struct {
		name      string
		code      int
		body      string
		wantCode  int32
		wantError string
	}{
		{"bad request keeps the agent's text", http.StatusBadRequest, "previous terminated container not found\n", 400,
			"previous terminated container not found"},
		{"internal error keeps the agent's text", http.StatusInternalServerError, "boom", 500,
			"Internal error occurred: boom"},
		{"other codes get their generic message", http.StatusNotFound, "no such pod", 404,
			`the server could not find the requested resource ( pods/log p)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := logError(tc.code, tc.body, "p")
			st, ok := err.(interface{ Status() metav1.Status })
			if !ok {
				t.Fatalf("logError = %v, not an API status", err)
			}
			if got := st.Status(); got.Code != tc.wantCode || err.Error() != tc.wantError {
				t.Errorf("logError = %d %q, want %d %q", got.Code, err.Error(), tc.wantCode, tc.wantError)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
