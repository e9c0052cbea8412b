package cli

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/batchlet/batchlet/controller/podgc"
)

// --terminated-pod-gc-threshold takes upstream's default and meaning
// (<= 0: no limit), which the pod GC's options spell as a negative value
// (0 there is the default).
func TestTerminatedPodGCThresholdFlag(t *testing.T) {
	tests := []struct {
		args []string
		want int
	}{
		{nil, podgc.DefaultTerminatedPodThreshold},
		{[]string{"--terminated-pod-gc-threshold=500"}, 500},
		{[]string{"--terminated-pod-gc-threshold=0"}, -1},
		{[]string{"--terminated-pod-gc-threshold=-3"}, -1},
	}
	for _, tt := range tests {
		fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var v int
		addPodGCFlag(fl, &v)
		if err := fl.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if got := podGCThreshold(v); got != tt.want {
			t.Errorf("%v: threshold option %d, want %d", tt.args, got, tt.want)
		}
	}
}
