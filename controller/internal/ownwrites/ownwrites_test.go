package ownwrites

import "testing"

func TestTracker(t *testing.T) {
	type step struct {
		op       string // wrote, behind, forget
		from, to string
		rv       string
		behind   bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"nothing written: never behind", []step{{op: "behind", rv: "5"}}},
		{"the replaced copy is behind, the written one is not", []step{
			{op: "wrote", from: "5", to: "6"},
			{op: "behind", rv: "5", behind: true},
			{op: "behind", rv: "6"},
			{op: "behind", rv: "5"}, // caught up: forgotten
		}},
		{"every copy a chain of writes replaced is behind", []step{
			{op: "wrote", from: "5", to: "6"},
			{op: "wrote", from: "6", to: "7"},
			{op: "behind", rv: "5", behind: true},
			{op: "behind", rv: "6", behind: true},
			{op: "behind", rv: "9"}, // a later write by someone else: caught up
		}},
		{"a no-op update is not waited for", []step{
			{op: "wrote", from: "5", to: "5"},
			{op: "behind", rv: "5"},
		}},
		{"an unknown previous version is not waited for", []step{
			{op: "wrote", from: "", to: "5"},
			{op: "behind", rv: ""},
		}},
		{"forget", []step{
			{op: "wrote", from: "5", to: "6"},
			{op: "forget"},
			{op: "behind", rv: "5"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := New()
			for i, s := range tc.steps {
				switch s.op {
				case "wrote":
					tr.Wrote("ns/a", s.from, s.to)
				case "forget":
					tr.Forget("ns/a")
				case "behind":
					if got := tr.Behind("ns/a", s.rv); got != s.behind {
						t.Errorf("step %d: Behind(%q) = %v, want %v", i, s.rv, got, s.behind)
					}
					if tr.Behind("ns/other", s.rv) {
						t.Errorf("step %d: another key is behind", i)
					}
				}
			}
		})
	}
}
