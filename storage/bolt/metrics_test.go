package bolt_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/batchlet/batchlet/storage/bolt"
)

func TestCollectorReportsStats(t *testing.T) {
	b, _ := openTemp(t, bolt.Options{CompactInterval: -1})
	ctx := context.Background()
	if _, err := b.Create(ctx, "/a", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "/a", nil); err == nil {
		t.Fatal("second create succeeded")
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(bolt.NewCollector(b))
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		m := f.GetMetric()[0]
		if c := m.GetCounter(); c != nil {
			got[f.GetName()] = c.GetValue()
		} else {
			got[f.GetName()] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{
		"batchlet_storage_writes_total":         2,
		"batchlet_storage_applied_writes_total": 1,
		"batchlet_storage_current_revision":     1,
		"batchlet_storage_compact_revision":     0,
	}
	for name, v := range want {
		if got[name] != v {
			t.Fatalf("%s = %v, want %v (all: %v)", name, got[name], v, got)
		}
	}
	if len(got) != 12 {
		t.Fatalf("gathered %d metrics, want 12: %v", len(got), got)
	}
}
