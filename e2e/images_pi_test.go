package e2e

import (
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/batchlet/batchlet/runtime/image/imagetest"
)

// piJob is the seed's π example, unchanged (Kubernetes' Job documentation).
const piJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  template:
    spec:
      containers:
      - name: pi
        image: perl:5.34.0
        command: ["perl",  "-Mbignum=bpi", "-wle", "print bpi(2000)"]
      restartPolicy: Never
  backoffLimit: 4
`

// perlImage is a perl image built from the host's perl, with what the π
// example loads: the interpreter and its libraries, perl-base (with its
// XS modules), bignum and Debian's libmath-bigint-perl (the Math::BigInt
// that computes bpi(2000); perl 5.36's own crashes on it).
func perlImage(t *testing.T) v1.Image {
	files := imagetest.HostFiles(t, "/usr/bin/perl", "/usr/lib/x86_64-linux-gnu/perl-base",
		"/usr/share/perl/5.36/bignum.pm", "/usr/share/perl5/Math/BigInt.pm", "/usr/share/perl5/Math/BigInt",
		"/usr/share/perl5/Math/BigFloat.pm")
	return imagetest.Image(t, v1.Config{Cmd: []string{"perl", "-v"}}, imagetest.Layer(t, files...))
}

// TestImagePiFromMirror: the seed's π manifest runs unchanged with
// `image: perl:5.34.0` served by a registry on loopback, which
// --registry-mirror puts in Docker Hub's place; the container's perl is
// the image's, not the host's.
func TestImagePiFromMirror(t *testing.T) {
	reg := imagetest.Registry(t)
	imagetest.Push(t, reg+"/library/perl:5.34.0", perlImage(t))
	s := startServer(t, "--runtime=image", "--registry-mirror", "docker.io="+reg)
	probeImageRuntime(t, s)
	s.apply(piJob)
	s.waitCondition("job/pi", "complete", 120*time.Second)
	out := s.kubectl("logs", "job/pi")
	const head = "3.14159265358979323846264338327950288419716939937510"
	const tail = "08658326459958133904780275901\n"
	if len(out) != 2002 || !strings.HasPrefix(out, head) || !strings.HasSuffix(out, tail) {
		t.Fatalf("logs (%d bytes) = %q, want 2000 digits of π", len(out), out)
	}
	if id := s.jsonpath("pods", "{.items[0].status.containerStatuses[0].imageID}"); !strings.HasPrefix(id, "docker.io/library/perl@sha256:") {
		t.Errorf("imageID = %q, want the image's digest under its own name", id)
	}
	describe := s.kubectl("describe", "pods", "-l", "job-name=pi")
	if want := `Successfully pulled image "perl:5.34.0"`; !strings.Contains(describe, want) {
		t.Errorf("describe lacks %q:\n%s", want, describe)
	}
}
