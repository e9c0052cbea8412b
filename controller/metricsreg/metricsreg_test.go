package metricsreg

import (
	"errors"
	"testing"

	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

func counter(name string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name})
}

func TestRegisterAll(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := counter("a_total"), counter("b_total")
	if err := Register(reg, "test", a, b); err != nil {
		t.Fatalf("Register: %v", err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	if strings.Join(names, ",") != "a_total,b_total" {
		t.Fatalf("gathered %v, want [a_total b_total]", names)
	}
}

func TestRegisterNilRegisterer(t *testing.T) {
	if err := Register(nil, "test", counter("a_total")); err != nil {
		t.Fatalf("Register(nil) = %v, want nil", err)
	}
}

func TestRegisterWrapsConflict(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := Register(reg, "test", counter("a_total")); err != nil {
		t.Fatalf("first Register: %v", err)
	}
	err := Register(reg, "scheduler", counter("a_total"))
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second Register = %v, want an AlreadyRegisteredError", err)
	}
	if want := "register scheduler metrics: "; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %q does not start with %q", err, want)
	}
}
