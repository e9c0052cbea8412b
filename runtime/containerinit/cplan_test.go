package containerinit

import (
	"slices"
	"testing"
)

func TestCPlan(t *testing.T) {
	uid := int64(1000)
	host := Spec{Hostname: "h", Argv: []string{"true"}, WorkDir: "/w", RunAsUser: &uid, Groups: []int64{7},
		CapDrop: []string{"ALL"}, CapAdd: []string{"KILL"}, NoNewPrivs: true,
		Mounts: []Mount{{Source: "/tmp/pod/hosts", Target: "/etc/hosts", ReadOnly: true}}, Hide: []string{"/data", "/tmp/x"}, Keep: []string{"/data/w"}}
	tests := []struct {
		name string
		spec Spec
		want string // "" when the Go init must run it
	}{
		{name: "host container", spec: host,
			want: "6:cinit11:h3:\"h\"2:/w4:\"/w\"1:12:324:10000:1:11:71:11:114:/tmp/pod/hosts31:/run/batchlet/hosttmp/pod/hosts10:/etc/hosts1:1" +
				"1:221:/run/batchlet/hosttmp5:/data1:17:/data/w1:14:true6:\"true\""},
		{name: "image container", spec: Spec{Rootfs: "/r", Argv: []string{"true"}}},
		{name: "image user", spec: Spec{User: "nobody", Argv: []string{"true"}}},
		{name: "unknown capability", spec: Spec{CapAdd: []string{"NOPE"}, Argv: []string{"true"}}},
		{name: "no command", spec: Spec{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := CPlan(tt.spec)
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("CPlan = %q, %v; want %q", got, ok, tt.want)
			}
		})
	}
}

func TestInitAdded(t *testing.T) {
	for _, tt := range []struct{ args, want []string }{
		{[]string{Arg0, "{}"}, []string{}},
		{[]string{Arg0, "{}", "GOMAXPROCS"}, []string{"GOMAXPROCS"}},
		{[]string{Arg0, "{}", "6:cinit1", "GOMAXPROCS"}, []string{"GOMAXPROCS"}},
	} {
		if got := initAdded(tt.args); !slices.Equal(got, tt.want) {
			t.Errorf("initAdded(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
