package build

import "k8s.io/kube-openapi/pkg/common"

// param is one request parameter of a route.
type param struct {
	name     string
	desc     string
	required bool
	kind     common.ParameterKind
	dataType string
	multiple bool
}

func (p param) Name() string               { return p.name }
func (p param) Description() string        { return p.desc }
func (p param) Required() bool             { return p.required }
func (p param) Kind() common.ParameterKind { return p.kind }
func (p param) DataType() string           { return p.dataType }
func (p param) AllowMultiple() bool        { return p.multiple }

// response is one status code a route answers with.
type response struct {
	code  int
	msg   string
	model interface{}
}

func (r response) Code() int          { return r.code }
func (r response) Message() string    { return r.msg }
func (r response) Model() interface{} { return r.model }

// route is one HTTP operation on one path.
type route struct {
	method    string
	path      string
	opID      string
	tag       string
	desc      string
	params    []common.Parameter
	consumes  []string
	produces  []string
	metadata  map[string]interface{}
	body      interface{}
	responses []common.StatusCodeResponse
}

func (r *route) Method() string                                   { return r.method }
func (r *route) Path() string                                     { return r.path }
func (r *route) OperationName() string                            { return r.opID }
func (r *route) Parameters() []common.Parameter                   { return r.params }
func (r *route) Description() string                              { return r.desc }
func (r *route) Consumes() []string                               { return r.consumes }
func (r *route) Produces() []string                               { return r.produces }
func (r *route) Metadata() map[string]interface{}                 { return r.metadata }
func (r *route) RequestPayloadSample() interface{}                { return r.body }
func (r *route) ResponsePayloadSample() interface{}               { return nil }
func (r *route) StatusCodeResponses() []common.StatusCodeResponse { return r.responses }

// container groups the routes of one API group version.
type container struct {
	root   string
	routes []common.Route
}

func (c *container) RootPath() string                   { return c.root }
func (c *container) PathParameters() []common.Parameter { return nil }
func (c *container) Routes() []common.Route             { return c.routes }
