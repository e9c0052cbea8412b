package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/batchlet/batchlet/apiserver/authn"
	"github.com/batchlet/batchlet/apiserver/endpoints"
	"github.com/batchlet/batchlet/apiserver/endpoints/handlers"
	"github.com/batchlet/batchlet/apiserver/genericstore"
	"github.com/batchlet/batchlet/apiserver/patch"
	"github.com/batchlet/batchlet/apiserver/query"
	"github.com/batchlet/batchlet/apiserver/registry/strategy"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// InProcessCalls are typed calls into the server's write path for clients
// in the same process (apiserver/inprocclient): the same authorization,
// admission, strategy, validation, managed fields, dry run and
// preconditions as a request over InProcessConfig, without encoding the
// object, routing a request and decoding the answer. Objects cross as
// copies in the form the wire would give (see wireCopy): the server never
// keeps a caller's object and the caller owns what it gets. Errors are the
// *apierrors.StatusError client-go would make of the answer.
type InProcessCalls struct{ s *Server }

// InProcessCalls returns the server's typed in-process entry points.
func (s *Server) InProcessCalls() *InProcessCalls { return &InProcessCalls{s: s} }

// call authorizes a request for info as the in-process user, runs fn,
// records the request's metrics and answers fn's result as client-go
// would have decoded it.
func (c *InProcessCalls) call(ctx context.Context, info endpoints.RequestInfo, fieldManager string, okCode int,
	fn func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error)) (runtime.Object, error) {
	return c.callCode(ctx, info, fieldManager, &okCode, fn)
}

// callCode is call for a request whose success code fn decides: fn sets
// *okCode.
func (c *InProcessCalls) callCode(ctx context.Context, info endpoints.RequestInfo, fieldManager string, okCode *int,
	fn func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error)) (runtime.Object, error) {
	s := c.s
	ctx = endpoints.WithUser(ctx, authn.LoopbackUser())
	info.Res = s.resource(info.Group, info.Version, info.Resource)
	start := s.clock.Now()
	var out runtime.Object
	err := s.authorizeResource(ctx, info)
	switch {
	case err != nil:
	case info.Res == nil || (!info.Res.Namespaced && info.Namespace != "" && info.Resource != "namespaces"):
		err = endpoints.ErrNotFoundPath()
	case info.Subresource != "" && !info.Res.HasSubresource(info.Subresource):
		err = endpoints.ErrNotFoundPath()
	default:
		if fieldManager != "" {
			ctx = endpoints.WithFieldManager(ctx, fieldManager)
		}
		out, err = fn(ctx, info)
	}
	code := *okCode
	if err != nil {
		st := clientStatus(err)
		code, out, err = int(st.Code), nil, &apierrors.StatusError{ErrStatus: *st}
	} else if out != nil {
		out = wireCopy(out)
		out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	}
	if info.Res != nil && info.Res.GVR == crdGVR && isWriteVerb(info.Verb) && code < 300 {
		s.crds.Sync(ctx) // as serveHTTP: names, conditions and serving follow at once
	}
	took := s.clock.Since(start)
	s.metrics.observe(info.Verb, info.Group, info.Version, info.Resource, info.Subresource, code, took)
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.Debug("request", "verb", info.Verb, "resource", info.Resource, "subresource", info.Subresource,
			"namespace", info.Namespace, "name", info.Name, "code", code, "duration", took, "inProcess", true)
	}
	return out, err
}

// clientStatus is the Status client-go decodes from the server's error
// answer: the JSON the handler writes, read back, without its TypeMeta
// (client-go's decoder clears it).
func clientStatus(err error) *metav1.Status {
	st := endpoints.StatusOf(err)
	out := &metav1.Status{}
	data, merr := json.Marshal(st)
	if merr == nil {
		merr = json.Unmarshal(data, out)
	}
	if merr != nil {
		out = st.DeepCopy()
	}
	out.TypeMeta = metav1.TypeMeta{}
	return out
}

// requestInfo names a request as its URL would.
func requestInfo(gvr schema.GroupVersionResource, namespace, name, subresource, verb string) endpoints.RequestInfo {
	return endpoints.RequestInfo{Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Namespace: namespace,
		Name: name, Subresource: subresource, Verb: verb}
}

// checkBodySize refuses an object whose protobuf body would exceed the
// server's request limit, as reading the request body would.
func (c *InProcessCalls) checkBodySize(obj runtime.Object) error {
	if sz, ok := obj.(interface{ Size() int }); ok && int64(sz.Size()) > c.s.cfg.MaxRequestBodyBytes {
		return endpoints.ErrTooLarge(c.s.cfg.MaxRequestBodyBytes)
	}
	return nil
}

// body is obj as the server would have decoded it from a request: a wire
// copy carrying the resource's apiVersion and kind.
func body(info endpoints.RequestInfo, obj runtime.Object) (runtime.Object, error) {
	if obj == nil {
		return nil, apierrors.NewBadRequest("the request has no body")
	}
	out := wireCopy(obj)
	// client-go's encoder names the kind of the object's Go type, whatever
	// its TypeMeta says.
	gvk := info.Res.GVK()
	if _, ok := out.(interface{ Marshal() ([]byte, error) }); !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s has no in-process form", gvk.Kind))
	}
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return out, nil
}

// Get answers GET of one object (or its status).
func (c *InProcessCalls) Get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, subresource string) (runtime.Object, error) {
	info := requestInfo(gvr, namespace, name, subresource, "get")
	return c.call(ctx, info, "", http.StatusOK, func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error) {
		if subresource != "" && subresource != "status" {
			return nil, endpoints.ErrMethodNotSupported(info.Resource+"/"+subresource, info.Verb)
		}
		obj, _, err := c.s.objects.Get(ctx, info.Res, namespace, name)
		return obj, err
	})
}

// Create answers POST of obj into namespace, as handlers.Create does.
func (c *InProcessCalls) Create(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj runtime.Object, opts metav1.CreateOptions) (runtime.Object, error) {
	info := requestInfo(gvr, namespace, "", "", "create")
	return c.call(ctx, info, opts.FieldManager, http.StatusCreated, func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error) {
		if info.Res.CreateOnly {
			return nil, endpoints.ErrMethodNotSupported(info.Resource, "in-process create")
		}
		if err := c.checkBodySize(obj); err != nil {
			return nil, err
		}
		in, err := body(info, obj)
		if err != nil {
			return nil, err
		}
		if err := strategy.NamespaceOnCreate(info.Res, genericstore.Accessor(in), namespace); err != nil {
			return nil, err
		}
		return c.s.rest.Writer.Create(ctx, info.Res, in, isDryRunOpt(opts.DryRun))
	})
}

// CreateJSON answers POST of a JSON body into namespace, as
// handlers.Create does (strict decoding, a custom resource's pruning and
// defaulting): for writers that hold their object as JSON (a custom
// resource's typed writer). The answer is not returned: such writers
// ignore it, and decoding it is what they save.
func (c *InProcessCalls) CreateJSON(ctx context.Context, gvr schema.GroupVersionResource, namespace string, data []byte, opts metav1.CreateOptions) error {
	info := requestInfo(gvr, namespace, "", "", "create")
	_, err := c.call(ctx, info, opts.FieldManager, http.StatusCreated, func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error) {
		return nil, c.createJSON(ctx, info, namespace, data, opts)
	})
	return err
}

// CreateRaw is CreateJSON of the body whose strict JSON decode is raw
// (strings, int64 and float64 numbers, bools, nils, maps and slices of
// them), for a custom resource's writer that builds that object instead
// of encoding it: it is pruned and defaulted as the decoded body would be
// and stored as it is, so the server takes raw. Whatever the one-pass
// decode of a custom resource would not take (another apiVersion or kind,
// a body that may be too large) is encoded and answered by CreateJSON's
// path, with its messages.
func (c *InProcessCalls) CreateRaw(ctx context.Context, gvr schema.GroupVersionResource, namespace string, raw map[string]interface{}, opts metav1.CreateOptions) error {
	info := requestInfo(gvr, namespace, "", "", "create")
	_, err := c.call(ctx, info, opts.FieldManager, http.StatusCreated, func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error) {
		res := info.Res
		gvk := res.GVK()
		if apiVersion, _ := raw["apiVersion"].(string); !res.CustomResource || res.CreateOnly || raw == nil ||
			apiVersion != gvk.GroupVersion().String() || raw["kind"] != gvk.Kind ||
			jsonSizeBound(raw) > c.s.cfg.MaxRequestBodyBytes {
			data, err := json.Marshal(raw)
			if err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, gvk.Kind, err))
			}
			return nil, c.createJSON(ctx, info, namespace, data, opts)
		}
		if err := endpoints.PruneRaw(discardHeaders{}, res, raw, opts.FieldValidation); err != nil {
			return nil, err
		}
		if res.DefaultRaw != nil {
			res.DefaultRaw(raw)
		}
		obj := &unstructured.Unstructured{Object: raw}
		obj.SetGroupVersionKind(gvk)
		return nil, c.createDecoded(ctx, info, namespace, obj, opts)
	})
	return err
}

// createJSON decodes data as the request body of a create and creates it.
func (c *InProcessCalls) createJSON(ctx context.Context, info endpoints.RequestInfo, namespace string, data []byte, opts metav1.CreateOptions) error {
	if info.Res.CreateOnly {
		return endpoints.ErrMethodNotSupported(info.Resource, "in-process create")
	}
	if int64(len(data)) > c.s.cfg.MaxRequestBodyBytes {
		return endpoints.ErrTooLarge(c.s.cfg.MaxRequestBodyBytes)
	}
	obj := info.Res.New()
	req := &http.Request{URL: &url.URL{RawQuery: fieldValidationQuery(opts.FieldValidation)}, Header: http.Header{}}
	if err := c.s.codec.DecodeJSON(discardHeaders{}, req, data, info.Res.GVK(), obj); err != nil {
		return err
	}
	return c.createDecoded(ctx, info, namespace, obj, opts)
}

// createDecoded creates obj, a decoded request body, in namespace.
func (c *InProcessCalls) createDecoded(ctx context.Context, info endpoints.RequestInfo, namespace string, obj runtime.Object, opts metav1.CreateOptions) error {
	if err := strategy.NamespaceOnCreate(info.Res, genericstore.Accessor(obj), namespace); err != nil {
		return err
	}
	_, err := c.s.rest.Writer.Create(ctx, info.Res, obj, isDryRunOpt(opts.DryRun))
	return err
}

// jsonSizeBound is at least the size of v's JSON encoding: a string byte
// encodes as at most 6 (\u00XX, or \ufffd for a byte of invalid UTF-8),
// a number as at most 32, and every value takes a separator.
func jsonSizeBound(v interface{}) int64 {
	switch v := v.(type) {
	case string:
		return 3 + 6*int64(len(v))
	case map[string]interface{}:
		n := int64(2)
		for k, e := range v {
			n += jsonSizeBound(k) + 1 + jsonSizeBound(e)
		}
		return n
	case []interface{}:
		n := int64(2)
		for _, e := range v {
			n += jsonSizeBound(e)
		}
		return n
	}
	return 33 // null, true, false, numbers
}

// Update answers PUT of obj (subresource "" or "status"), as
// handlers.Update does.
func (c *InProcessCalls) Update(ctx context.Context, gvr schema.GroupVersionResource, namespace string, obj runtime.Object, opts metav1.UpdateOptions, subresource string) (runtime.Object, error) {
	name := genericstore.Accessor(obj).GetName()
	info := requestInfo(gvr, namespace, name, subresource, "update")
	return c.call(ctx, info, opts.FieldManager, http.StatusOK, func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error) {
		mode, err := updateModeOf(info)
		if err != nil {
			return nil, err
		}
		if err := c.checkBodySize(obj); err != nil {
			return nil, err
		}
		in, err := body(info, obj)
		if err != nil {
			return nil, err
		}
		if err := strategy.NamespaceOnUpdate(info.Res, genericstore.Accessor(in), namespace); err != nil {
			return nil, err
		}
		return c.s.rest.Writer.Update(ctx, info.Res, namespace, name, mode, isDryRunOpt(opts.DryRun), handlers.Replace(info.Res, in))
	})
}

// Patch answers PATCH with a JSON, merge or strategic merge patch
// (subresource "" or "status"), as handlers.Patch does. Apply patches
// are not served here (false): the caller sends them over HTTP.
func (c *InProcessCalls) Patch(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresource string) (runtime.Object, error) {
	info := requestInfo(gvr, namespace, name, subresource, "patch")
	return c.call(ctx, info, opts.FieldManager, http.StatusOK, func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error) {
		return c.patch(ctx, info, pt, data, opts)
	})
}

// PatchVersion is Patch answering only the patched object's
// resourceVersion, for writers that keep nothing else of the answer (a
// node agent's status writes): the copy of the object Patch hands over is
// then not made.
func (c *InProcessCalls) PatchVersion(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresource string) (string, error) {
	info := requestInfo(gvr, namespace, name, subresource, "patch")
	var rv string
	_, err := c.call(ctx, info, opts.FieldManager, http.StatusOK, func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error) {
		out, err := c.patch(ctx, info, pt, data, opts)
		if err == nil && out != nil {
			rv = genericstore.Accessor(out).GetResourceVersion()
		}
		return nil, err
	})
	if err != nil {
		return "", err
	}
	return rv, nil
}

// patch applies the patch data to the object info names and answers the
// object stored (the server's: not to be changed or kept).
func (c *InProcessCalls) patch(ctx context.Context, info endpoints.RequestInfo, pt types.PatchType, data []byte, opts metav1.PatchOptions) (runtime.Object, error) {
	mode, err := updateModeOf(info)
	if err != nil {
		return nil, err
	}
	res := info.Res
	if err := patch.Check(res, pt, info.Name); err != nil {
		return nil, err
	}
	if pt == types.ApplyPatchType {
		return nil, apierrors.NewBadRequest("apply patches are not served in-process")
	}
	if int64(len(data)) > c.s.cfg.MaxRequestBodyBytes {
		return nil, endpoints.ErrTooLarge(c.s.cfg.MaxRequestBodyBytes)
	}
	p, err := patch.Parse(pt, data)
	if err != nil {
		return nil, err
	}
	codec := patch.Codec{
		CurrentJSON: func(cur runtime.Object) ([]byte, error) { return c.s.objects.JSON(res, cur) },
		// Only patches the typed merge leaves to the JSON path decode:
		// the request carrying fieldValidation is made for those.
		Decode: func(data []byte, into runtime.Object) error {
			return c.s.codec.DecodeJSON(discardHeaders{}, patchRequest(opts), data, res.GVK(), into)
		},
	}
	// As the handler: patch.Apply only reads cur, but the typed merge
	// shares cur's unpatched parts with its result.
	share := strategy.MayShare(res, mode, opts.FieldManager)
	return c.s.rest.Writer.Update(ctx, res, info.Namespace, info.Name, mode, isDryRunOpt(opts.DryRun), func(cur runtime.Object) (runtime.Object, error) {
		if !share {
			cur = cur.DeepCopyObject()
		}
		return patch.Apply(res, p, cur, codec)
	})
}

// Delete answers DELETE of one object, as handlers.Delete does with opts
// in the body.
func (c *InProcessCalls) Delete(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, opts metav1.DeleteOptions) error {
	info := requestInfo(gvr, namespace, name, "", "delete")
	code := http.StatusOK
	_, err := c.callCode(ctx, info, "", &code, func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error) {
		o := opts.DeepCopy()
		if p := o.PropagationPolicy; p != nil {
			switch *p {
			case metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground:
			default:
				return nil, apierrors.NewBadRequest(fmt.Sprintf("DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: %q: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"", *p))
			}
		}
		_, deleted, err := c.s.rest.Writer.Delete(ctx, info.Res, namespace, name, o)
		//lint:ignore SA1019 kube-apiserver still honours the deprecated orphanDependents; so does the handler's answer code
		if !deleted && o.OrphanDependents != nil && !*o.OrphanDependents {
			code = http.StatusAccepted // as handlers.writeDeleteResult
		}
		return nil, err
	})
	return err
}

// Bind answers POST of pods/binding, as podsubresources' Binding does.
func (c *InProcessCalls) Bind(ctx context.Context, namespace string, b *corev1.Binding, opts metav1.CreateOptions) error {
	info := requestInfo(corev1.SchemeGroupVersion.WithResource("pods"), namespace, b.Name, "binding", "create")
	_, err := c.call(ctx, info, opts.FieldManager, http.StatusCreated, func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error) {
		in := b.DeepCopy()
		in.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Binding"))
		return nil, c.s.pods.Bind(ctx, info, in, isDryRunOpt(opts.DryRun))
	})
	return err
}

// CreateToken answers POST serviceaccounts/<name>/token, as the
// TokenRequest handler does for the same request over HTTP.
func (c *InProcessCalls) CreateToken(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest, opts metav1.CreateOptions) (*authenticationv1.TokenRequest, error) {
	info := requestInfo(corev1.SchemeGroupVersion.WithResource("serviceaccounts"), namespace, name, "token", "create")
	out, err := c.call(ctx, info, opts.FieldManager, http.StatusCreated, func(ctx context.Context, info endpoints.RequestInfo) (runtime.Object, error) {
		if tr == nil {
			return nil, apierrors.NewBadRequest("the request has no body")
		}
		if err := c.checkBodySize(tr); err != nil {
			return nil, err
		}
		in := wireCopy(tr).(*authenticationv1.TokenRequest)
		if err := c.s.tokens.Issue(ctx, namespace, name, in); err != nil {
			return nil, err
		}
		return in, nil
	})
	if err != nil || out == nil {
		return &authenticationv1.TokenRequest{}, err
	}
	return out.(*authenticationv1.TokenRequest), nil
}

// updateModeOf is the strategy mode of an update or patch of info's
// subresource: only the main resource and status are served in-process.
func updateModeOf(info endpoints.RequestInfo) (strategy.Mode, error) {
	switch info.Subresource {
	case "":
		return strategy.Main, nil
	case "status":
		return strategy.Status, nil
	}
	return strategy.Main, endpoints.ErrMethodNotSupported(info.Resource+"/"+info.Subresource, info.Verb)
}

// isDryRunOpt reads dryRun options as the query parameter would be read.
func isDryRunOpt(values []string) bool {
	return query.DryRun(url.Values{"dryRun": values})
}

// patchRequest carries a patch's fieldValidation to the decoder, which
// reads it from the request's query.
func patchRequest(opts metav1.PatchOptions) *http.Request {
	return &http.Request{URL: &url.URL{RawQuery: fieldValidationQuery(opts.FieldValidation)}, Header: http.Header{}}
}

// fieldValidationQuery is the query a client sends for fieldValidation.
func fieldValidationQuery(v string) string {
	if v == "" {
		return ""
	}
	return url.Values{"fieldValidation": {v}}.Encode()
}

// discardHeaders takes the warnings a decode adds: typed in-process
// callers have no warning handler to show them to.
type discardHeaders struct{}

func (discardHeaders) Header() http.Header         { return http.Header{} }
func (discardHeaders) Write(b []byte) (int, error) { return len(b), nil }
func (discardHeaders) WriteHeader(int)             {}
