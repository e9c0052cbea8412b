package endpoints

import (
	"fmt"

	"github.com/batchlet/batchlet/apiserver/registry"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/utils/clock"
)

// Codec reads request bodies and writes answers for the served resources:
// body limits, JSON/YAML/protobuf decoding with fieldValidation and raw
// defaulting and pruning, and objects written as negotiated (object,
// Table, PartialObjectMetadata, protobuf).
type Codec struct {
	scheme   *runtime.Scheme
	protobuf *protobuf.Serializer
	maxBody  int64
	clock    clock.Clock
	// resourceForKind finds the served resource of a kind (nil if none),
	// for its raw defaulting and pruning.
	resourceForKind func(schema.GroupVersionKind) *registry.Resource
}

// NewCodec returns a Codec for scheme's types; request bodies over maxBody
// bytes are refused, Tables' ages are measured on clk.
func NewCodec(scheme *runtime.Scheme, maxBody int64, clk clock.Clock, resourceForKind func(schema.GroupVersionKind) *registry.Resource) *Codec {
	return &Codec{scheme: scheme, protobuf: protobuf.NewSerializer(scheme, scheme), maxBody: maxBody, clock: clk, resourceForKind: resourceForKind}
}

// Protobuf is the Codec's protobuf serializer (Kubernetes' envelope).
func (c *Codec) Protobuf() *protobuf.Serializer { return c.protobuf }

// accessor is obj's metadata; every served object has some.
func accessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("object %T has no metadata: %v", obj, err))
	}
	return m
}
