package controlplane

import (
	"fmt"
	"slices"
	"testing"
)

// The table decides the start order and refuses names it lacks, whatever
// order --controllers lists them in.
func TestSelectControllers(t *testing.T) {
	tests := map[string]struct {
		names   []string
		want    []string
		wantErr string
	}{
		"table order":  {names: []string{PodGCController, JobController}, want: []string{JobController, PodGCController}},
		"none":         {names: []string{}, want: nil},
		"all defaults": {names: DefaultControllers(), want: ControllerNames()},
		"unknown": {names: []string{JobController, "cronjob"},
			wantErr: fmt.Sprintf(`unknown controller "cronjob" (known: %v)`, ControllerNames())},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := selectControllers(tc.names, ControllerOptions{})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var gotNames []string
			for _, r := range got {
				gotNames = append(gotNames, r.Name)
				if r.Init == nil || r.Workers < 1 {
					t.Errorf("%s: incomplete registration %+v", r.Name, r)
				}
			}
			if !slices.Equal(gotNames, tc.want) {
				t.Errorf("selected %v, want %v", gotNames, tc.want)
			}
		})
	}
}
