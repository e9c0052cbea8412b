// Package apiserver serves a Kubernetes-compatible HTTP API over a
// storage.Backend. It routes requests and owns the write path (admission,
// strategy, managed fields, delete with finalizers and propagation), and
// assembles the parts that live in packages of their own: authentication
// (authn) and authorization (authz), discovery and OpenAPI (discovery),
// the REST verb handlers (endpoints/handlers), the pod subresources
// (podsubresources), the proxy to node agents (nodeproxy), TokenRequest
// (tokenrequest) and the reviews (reviews), the storage layer
// (genericstore), per-resource behaviour (registry, registry/strategy),
// the admission plugins (admission) and the loops (crdsync, nslifecycle,
// eventttl, kubernetesservice).
package apiserver

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/batchlet/batchlet/apiserver/admission"
	"github.com/batchlet/batchlet/apiserver/endpoints/handlers"

	"github.com/batchlet/batchlet/apiserver/authn"
	"github.com/batchlet/batchlet/apiserver/authz"
	"github.com/batchlet/batchlet/apiserver/crdsync"
	"github.com/batchlet/batchlet/apiserver/discovery"
	"github.com/batchlet/batchlet/apiserver/endpoints"

	"github.com/batchlet/batchlet/apiserver/eventttl"
	"github.com/batchlet/batchlet/apiserver/genericstore"
	"github.com/batchlet/batchlet/apiserver/ipalloc"
	"github.com/batchlet/batchlet/apiserver/nodeproxy"
	"github.com/batchlet/batchlet/apiserver/nslifecycle"
	"github.com/batchlet/batchlet/apiserver/patch"
	"github.com/batchlet/batchlet/apiserver/podsubresources"
	"github.com/batchlet/batchlet/apiserver/registry"
	"github.com/batchlet/batchlet/apiserver/reviews"
	"github.com/batchlet/batchlet/apiserver/satoken"
	"github.com/batchlet/batchlet/apiserver/tokenrequest"
	"github.com/batchlet/batchlet/storage"
	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// DefaultServiceCIDR is the service CIDR unless configured: kubeadm's
// default, whose first address 10.96.0.1 is the kubernetes Service.
const DefaultServiceCIDR = "10.96.0.0/12"

// DefaultMaxRequestBodyBytes is the request body limit unless configured.
const DefaultMaxRequestBodyBytes = 3 << 20

// GitVersion is what /version reports: the Kubernetes version whose API and
// batch behaviour batchlet implements. "batchlet" is semver build metadata
// (as k3s's "+k3s1"), not a pre-release, so clients comparing versions
// (AtLeast v1.34.0) see 1.34.0 itself.
const GitVersion = "v1.34.0+batchlet"

// Major and Minor are GitVersion's parts, as /version reports them.
const (
	Major = "1"
	Minor = "34"
)

// Config configures a Server.
type Config struct {
	Storage storage.Backend
	// Authenticator checks bearer tokens; nil rejects every external request
	// except the open health and version endpoints.
	Authenticator endpoints.Authenticator
	// Authorizer decides every authenticated request and answers access
	// reviews; nil allows everything (AllowAll).
	Authorizer endpoints.Authorizer
	// ServiceAccountIssuer signs the TokenRequest API's tokens and
	// authenticates them; nil serves no TokenRequest, accepts no
	// service-account token and adds no token volume to pods.
	ServiceAccountIssuer *satoken.Issuer
	// RBAC authorizes with the RBAC objects in the store (and creates the
	// bootstrap roles at start) instead of Authorizer.
	RBAC bool
	// MaxRequestBodyBytes caps request bodies (DefaultMaxRequestBodyBytes if 0).
	MaxRequestBodyBytes int64
	// NodeProxyToken, when set, is sent as a bearer token to node agents
	// when proxying pods/log and pods/exec.
	NodeProxyToken string
	// NodeTLS is the TLS configuration towards node agents: RootCAs verify
	// their serving certificates, Certificates hold the server's kubelet
	// client certificate. Nil verifies with the system's roots.
	NodeTLS *tls.Config
	Clock   clock.Clock
	Logger  *slog.Logger
	// Registerer receives the server's metrics; Gatherer serves /metrics.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// OpenAPIV2 and OpenAPIV3 serve /openapi/v2 and /openapi/v3[/...]; nil
	// answers 404.
	OpenAPIV2 http.Handler
	OpenAPIV3 http.Handler
	// BookmarkInterval is how often watches with allowWatchBookmarks get a
	// BOOKMARK (default 1 minute).
	BookmarkInterval time.Duration
	// NamespaceSyncInterval is how often terminating namespaces are
	// re-checked (default 1 second).
	NamespaceSyncInterval time.Duration
	// ServiceCIDR is the range Service ClusterIPs come from
	// (DefaultServiceCIDR if empty).
	ServiceCIDR string
	// EventTTL is how long an event lives after its last write (default 1
	// hour, negative keeps events forever).
	EventTTL time.Duration
}

// Server is the API server. Create it with New.
type Server struct {
	cfg    Config
	store  storage.Backend
	clock  clock.Clock
	log    *slog.Logger
	scheme *runtime.Scheme
	served *registry.Table
	// expirer is the event TTL loop (eventExpirer).
	expirer     *eventttl.Expirer
	expirerOnce sync.Once
	// discovery serves discovery and OpenAPI v3 from served.
	discovery *discovery.Handler
	// crds names, establishes, serves and finalizes CRDs.
	crds    *crdsync.Loop
	metrics *metrics
	handler http.Handler
	// namespaces finishes the deletion of namespaces.
	namespaces *nslifecycle.Loop
	// objects reads and writes every resource's objects in the store.
	objects *genericstore.Store
	// codec reads request bodies and writes negotiated answers.
	codec *endpoints.Codec
	// authn finds who external requests are; authz decides them.
	authn         authn.Request
	authz         endpoints.Authorizer
	fieldManagers *patch.FieldManagers
	// nodes proxies pods/log, pods/exec and nodes/proxy to node agents.
	nodes *nodeproxy.Proxy
	// rest serves the REST verbs of every resource.
	rest *handlers.Handlers
	// pods serves pods/binding and pods/eviction.
	pods *podsubresources.Handlers
	// tokens serves the TokenRequest API.
	tokens *tokenrequest.Handler
	// reviews answers the review resources.
	reviews *reviews.Handler
	// serviceRange is where Service ClusterIPs come from.
	serviceRange *ipalloc.Range
	admit        admissionPlugins
	// self is where the kubernetes Service sends clients (see
	// AdvertiseAt); unset, no kubernetes Service is kept.
	self netip.AddrPort
}

// New builds a Server and makes sure the initial namespaces exist.
func New(cfg Config) (*Server, error) {
	if cfg.Storage == nil {
		return nil, fmt.Errorf("apiserver: Config.Storage is required")
	}
	if cfg.MaxRequestBodyBytes == 0 {
		cfg.MaxRequestBodyBytes = DefaultMaxRequestBodyBytes
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BookmarkInterval == 0 {
		cfg.BookmarkInterval = time.Minute
	}
	if cfg.EventTTL == 0 {
		cfg.EventTTL = time.Hour
	}
	if cfg.ServiceCIDR == "" {
		cfg.ServiceCIDR = DefaultServiceCIDR
	}
	serviceRange, err := ipalloc.NewRange(cfg.ServiceCIDR)
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	if cfg.NamespaceSyncInterval == 0 {
		cfg.NamespaceSyncInterval = time.Second
	}
	reg := cfg.Registerer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg = r
		if cfg.Gatherer == nil {
			cfg.Gatherer = r
		}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("apiserver: build scheme: %w", err)
	}
	if err := jobsetv1alpha2.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("apiserver: add jobset to scheme: %w", err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("apiserver: add apiextensions to scheme: %w", err)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("apiserver: register metrics: %w", err)
	}
	s := &Server{
		cfg: cfg, store: cfg.Storage, clock: cfg.Clock, log: cfg.Logger, scheme: scheme,
		served: registry.NewTable(registry.All()), metrics: m,
		fieldManagers: patch.NewFieldManagers(scheme),
		serviceRange:  serviceRange,
	}
	s.admit = s.newAdmission()
	s.codec = endpoints.NewCodec(scheme, cfg.MaxRequestBodyBytes, cfg.Clock, s.resourceForKind)
	s.objects = genericstore.New(genericstore.Config{Backend: cfg.Storage, Clock: cfg.Clock, Logger: cfg.Logger, BookmarkInterval: cfg.BookmarkInterval})
	s.rest = &handlers.Handlers{Store: s.objects, Writer: restWriter{s}, Codec: s.codec, FieldManagers: s.fieldManagers, Watchers: s.metrics.watchers}
	s.nodes = &nodeproxy.Proxy{Objects: podsAndNodes{s}, Transport: nodeproxy.NewTransport(cfg.NodeTLS), Token: cfg.NodeProxyToken, Logger: s.log}
	s.pods = &podsubresources.Handlers{Objects: podWriter{s}, Codec: s.codec, Clock: s.clock}
	s.authn = s.newAuthenticator()
	s.authz = authz.New(cfg.RBAC, cfg.Authorizer, storeReader{s})
	s.tokens = &tokenrequest.Handler{Issuer: cfg.ServiceAccountIssuer, Objects: sharedObjects{s}, Codec: s.codec, Clock: s.clock}
	s.reviews = &reviews.Handler{Authorizer: s.authz, Codec: s.codec, UserOf: endpoints.UserOf, Clock: s.clock}
	s.discovery = &discovery.Handler{Served: s.served, OpenAPIV3: cfg.OpenAPIV3, CRD: s.crdNamed, Log: s.log}
	s.crds = crdsync.New(crdStore{contentStore{s}}, s.served, cfg.NamespaceSyncInterval, s.clock, s.log)
	s.namespaces = nslifecycle.New(namespaceStore{contentStore{s}}, cfg.NamespaceSyncInterval, s.clock, s.log)
	s.handler = s.buildHandler()
	if err := s.bootstrap(context.Background()); err != nil {
		return nil, err
	}
	if err := s.bootstrapCRDs(context.Background()); err != nil {
		return nil, err
	}
	if err := s.bootstrapRBAC(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

// admissionPlugins are the admission plugins a create runs.
type admissionPlugins struct {
	namespace admission.NamespaceLifecycle
	// serviceAccount is nil when no service-account tokens are issued.
	serviceAccount *admission.ServiceAccount
	clusterIPs     *admission.ClusterIPs
}

func (s *Server) newAdmission() admissionPlugins {
	objects := storeReader{s}
	plugins := admissionPlugins{
		namespace:  admission.NamespaceLifecycle{Objects: objects},
		clusterIPs: admission.NewClusterIPs(objects, s.serviceRange),
	}
	if s.cfg.ServiceAccountIssuer != nil {
		plugins.serviceAccount = &admission.ServiceAccount{Objects: objects}
	}
	return plugins
}

// Handler is the HTTP handler serving the whole API.
func (s *Server) Handler() http.Handler { return s.handler }

// Run runs the server's background loops (namespace finalization, event
// expiry, CRD sync, the kubernetes Service) until ctx ends. History
// compaction is the store's own (package storage).
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, loop := range []func(context.Context){s.eventExpirer().Run, s.namespaces.Run, s.crds.Run, s.runKubernetesService} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(ctx)
		}()
	}
	wg.Wait()
	return nil
}

// eventExpirer is the loop deleting events after Config.EventTTL.
// It keeps the revisions it marked, so there is one per server.
func (s *Server) eventExpirer() *eventttl.Expirer {
	s.expirerOnce.Do(func() {
		s.expirer = &eventttl.Expirer{Store: eventStore{s: s}, TTL: s.cfg.EventTTL, Clock: s.clock, Log: s.log}
	})
	return s.expirer
}

func (s *Server) resource(group, version, resource string) *registry.Resource {
	return s.served.Get(schema.GroupVersionResource{Group: group, Version: version, Resource: resource})
}

// resourceForKind finds the served resource of a kind (nil if none).
func (s *Server) resourceForKind(gvk schema.GroupVersionKind) *registry.Resource {
	return s.served.ForKind(gvk)
}
