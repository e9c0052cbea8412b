package certificates

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/batchlet/batchlet/controller/controllerctx"
	"github.com/batchlet/batchlet/pki"
)

// Options configure the controller.
type Options struct {
	// CA signs the certificates; nil (no CA key here, as on a real
	// cluster) makes the controller do nothing.
	CA *pki.CA
}

var _ controllerctx.Controller = (*Controller)(nil)

// Controller approves node CSRs and signs approved ones.
type Controller struct {
	client kubernetes.Interface
	csrs   certlisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
	ca     *pki.CA
	clock  clock.Clock
	log    *slog.Logger
}

// New builds the controller on cc's shared CSR informer.
func New(cc controllerctx.Context, opts Options) (*Controller, error) {
	cc = cc.WithDefaults()
	c := &Controller{client: cc.Client, ca: opts.CA, clock: cc.Clock, log: cc.Logger.With("controller", "csrsigning")}
	if c.ca == nil {
		return c, nil
	}
	inf := cc.Informers.Certificates().V1().CertificateSigningRequests()
	c.csrs, c.synced = inf.Lister(), inf.Informer().HasSynced
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "certificate"})
	enqueue := func(obj interface{}) {
		if csr, ok := obj.(*certificatesv1.CertificateSigningRequest); ok {
			c.queue.Add(csr.Name)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("csr controller: watch certificatesigningrequests: %w", err)
	}
	return c, nil
}

// Run syncs CSRs with workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	if c.ca == nil {
		c.log.Info("no cluster signing CA: node certificate requests are left to another signer")
		<-ctx.Done()
		return nil
	}
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return fmt.Errorf("csr controller: waiting for caches: %w", ctx.Err())
	}
	for range workers {
		go wait.UntilWithContext(ctx, c.worker, time.Second)
	}
	<-ctx.Done()
	return nil
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNext(ctx) {
	}
}

func (c *Controller) processNext(ctx context.Context) bool {
	name, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(name)
	if err := c.sync(ctx, name); err != nil {
		c.log.Info("syncing certificate signing request failed, retrying", "name", name, "err", err)
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// sync does one step of decide's; the write it makes brings the CSR back
// for the next (approve, then sign).
func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get csr: %w", err)
	}
	d := decide(csr)
	csr = csr.DeepCopy()
	now := c.clock.Now()
	switch d.action {
	case actionNone:
		return nil
	case actionApprove:
		csr.Status.Conditions = append(csr.Status.Conditions, condition(certificatesv1.CertificateApproved, approvedReason, d.message, now))
		if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("approve csr: %w", err)
		}
		c.log.Info("approved certificate signing request", "name", name, "signer", csr.Spec.SignerName, "requester", csr.Spec.Username)
		return nil
	case actionFail:
		csr.Status.Conditions = append(csr.Status.Conditions, condition(certificatesv1.CertificateFailed, failedReason, d.message, now))
	case actionSign:
		certPEM, err := c.sign(csr, now)
		if err != nil {
			return err
		}
		csr.Status.Certificate = certPEM
	}
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("write csr status: %w", err)
	}
	c.log.Info("signed certificate signing request", "name", name, "signer", csr.Spec.SignerName, "failed", d.action == actionFail)
	return nil
}

// sign issues the certificate an approved, valid csr asks for.
func (c *Controller) sign(csr *certificatesv1.CertificateSigningRequest, now time.Time) ([]byte, error) {
	req, err := parseRequest(csr.Spec.Request)
	if err != nil {
		return nil, err
	}
	certPEM, err := c.ca.Issue(req, extUsages(csr.Spec.Usages), now, validity(csr))
	if err != nil {
		return nil, fmt.Errorf("sign csr %s: %w", csr.Name, err)
	}
	return certPEM, nil
}
