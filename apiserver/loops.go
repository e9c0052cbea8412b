package apiserver

import (
	"context"
	"net/netip"

	"github.com/batchlet/batchlet/apiserver/kubernetesservice"
	"k8s.io/client-go/kubernetes"
)

// AdvertiseAt sets the address and port clients reach this server at,
// which the default/kubernetes Service and its Endpoints and EndpointSlice
// point to. Call it before Run; without it no kubernetes Service is kept.
func (s *Server) AdvertiseAt(self netip.AddrPort) { s.self = self }

// runKubernetesService runs the loop keeping default/kubernetes, through
// an in-process client, when AdvertiseAt was called.
func (s *Server) runKubernetesService(ctx context.Context) {
	if !s.self.IsValid() {
		return
	}
	client, err := kubernetes.NewForConfig(s.InProcessConfig())
	if err != nil {
		s.log.Error("kubernetes service: build client", "err", err)
		return
	}
	loop := &kubernetesservice.Loop{Client: client, Self: s.self, ClusterIP: s.serviceRange.First(), Clock: s.clock, Log: s.log}
	loop.Run(ctx)
}
