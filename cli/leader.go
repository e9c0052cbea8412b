package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/batchlet/batchlet/install"
)

// leaderElection configures `batchlet controllers --leader-elect`.
type leaderElection struct {
	enabled   bool
	namespace string
	name      string
}

// errLostLeadership ends a replica that lost its Lease, as
// kube-controller-manager and controller-runtime managers exit: its
// informers and queues may hold state the new leader has moved past.
var errLostLeadership = errors.New("lost the leader-election lease")

func defaultLeaderNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(data) > 0 {
		return string(data)
	}
	return install.DefaultNamespace
}

// runLeaderElected campaigns for the Lease with upstream's default timings
// (15 s lease, 10 s renew deadline, 2 s retry) and runs run while leading.
func runLeaderElected(outer context.Context, cfg *rest.Config, le leaderElection, logger *slog.Logger, run func(context.Context) error) error {
	client, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return fmt.Errorf("building the leader-election client: %w", err)
	}
	host, _ := os.Hostname()
	identity := host + "_" + string(uuid.NewUUID())
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.namespace, Name: le.name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	ctx, cancel := context.WithCancel(outer)
	defer cancel()
	var runErr error
	led := false
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
		Name:            le.name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				led = true
				logger.Info("leading; starting controllers", "lease", le.namespace+"/"+le.name, "identity", identity)
				runErr = run(ctx)
				cancel()
			},
			OnStoppedLeading: func() { logger.Info("stopped leading", "lease", le.namespace+"/"+le.name, "identity", identity) },
			OnNewLeader: func(id string) {
				if id != identity {
					logger.Info("another replica leads", "lease", le.namespace+"/"+le.name, "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("configuring leader election: %w", err)
	}
	logger.Info("campaigning for leadership", "lease", le.namespace+"/"+le.name, "identity", identity)
	elector.Run(ctx)
	switch {
	case runErr != nil:
		return runErr
	case led && outer.Err() == nil:
		return errLostLeadership
	}
	return nil
}
