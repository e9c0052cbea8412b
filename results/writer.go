package results

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// Writer creates ContainerResults. A result that exists already (same
// name) is not an error: names are deterministic, so it is this one.
type Writer interface {
	Create(ctx context.Context, r *ContainerResult) error
}

// restWriter posts the typed result as JSON and does not decode the
// answer: a node agent writes one result per container attempt, and the
// unstructured round trip of a dynamic client (convert, encode, decode
// the echoed object) was most of the client's share of that write.
type restWriter struct {
	client rest.Interface
}

// NewWriter returns a Writer over a REST client for results.batchlet.dev/v1
// built from cfg (JSON: results are a CRD, served without protobuf).
func NewWriter(cfg *rest.Config) (Writer, error) {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &GV
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = runtime.ContentTypeJSON
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("results: client: %w", err)
	}
	return restWriter{client: client}, nil
}

func (w restWriter) Create(ctx context.Context, r *ContainerResult) error {
	return postJSON(ctx, r, func(ctx context.Context, namespace string, body []byte) error {
		return w.client.Post().Namespace(namespace).Resource(Resource).SetHeader("Content-Type", runtime.ContentTypeJSON).Body(body).Do(ctx).Error()
	})
}

// PostFunc creates the result whose JSON body is given in namespace.
type PostFunc func(ctx context.Context, namespace string, body []byte) error

// NewPostWriter returns a Writer that sends each result's JSON body
// through post: an API server in the same process takes it without a
// request (apiserver.InProcessCalls.CreateJSON).
func NewPostWriter(post PostFunc) Writer { return postWriter(post) }

type postWriter PostFunc

func (w postWriter) Create(ctx context.Context, r *ContainerResult) error {
	return postJSON(ctx, r, PostFunc(w))
}

// postJSON encodes r and creates it with post; one that exists is not an
// error.
func postJSON(ctx context.Context, r *ContainerResult, post PostFunc) error {
	r.APIVersion, r.Kind = GV.String(), Kind
	body, err := encodeJSON(r)
	if err != nil {
		return fmt.Errorf("results: encode %s: %w", r.Name, err)
	}
	if err := post(ctx, r.Namespace, body); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("results: create %s: %w", r.Name, err)
	}
	return nil
}

// RawPostFunc creates the result whose body, as a strict JSON decode
// gives it, is raw in namespace; raw is the callee's.
type RawPostFunc func(ctx context.Context, namespace string, raw map[string]interface{}) error

// NewRawPostWriter returns a Writer that hands each result to postRaw as
// the decoded object of its JSON body, built without encoding it (an API
// server in the same process: apiserver.InProcessCalls.CreateRaw), and
// those it cannot build so to post as JSON.
func NewRawPostWriter(postRaw RawPostFunc, post PostFunc) Writer {
	return rawPostWriter{postRaw: postRaw, post: post}
}

type rawPostWriter struct {
	postRaw RawPostFunc
	post    PostFunc
}

func (w rawPostWriter) Create(ctx context.Context, r *ContainerResult) error {
	r.APIVersion, r.Kind = GV.String(), Kind
	raw, ok := decodedJSON(r)
	if !ok {
		return postJSON(ctx, r, w.post)
	}
	if err := w.postRaw(ctx, r.Namespace, raw); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("results: create %s: %w", r.Name, err)
	}
	return nil
}

// DynamicWriter writes results through a dynamic client.
type DynamicWriter struct {
	Client dynamic.Interface
}

func (w DynamicWriter) Create(ctx context.Context, r *ContainerResult) error {
	u, err := ToUnstructured(r)
	if err != nil {
		return err
	}
	_, err = w.Client.Resource(GVR).Namespace(r.Namespace).Create(ctx, u, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("results: create %s: %w", r.Name, err)
	}
	return nil
}
