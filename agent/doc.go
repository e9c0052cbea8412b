// Package agent is the node agent: it registers a Node, renews its Lease,
// runs the pods bound to it through a runtime.Runtime, writes their status
// as the kubelet does, and serves kubelet-style logs and exec endpoints.
//
// Endpoints (HTTPS, "Authorization: Bearer <Config.Token>"), advertised in
// the Node's daemonEndpoints.kubeletEndpoint.Port:
//
//	GET /containerLogs/{namespace}/{pod}/{container}?follow=&previous=&tailLines=&sinceSeconds=&sinceTime=&timestamps=&limitBytes=
//	/exec/{namespace}/{pod}/{container}?command=...&input=1&output=1&error=1&tty=1
//	/attach/{namespace}/{pod}/{container}?input=1&output=1&error=1&tty=1
//
// Exec and attach speak WebSocket v5.channel.k8s.io (and v4) and SPDY (through
// k8s.io/cri-streaming, the kubelet's own server).
//
// Pod IPs: each pod gets its own loopback address from its node's
// spec.podCIDR, a /14 block of 127.0.0.0/8 the agent picks at registration
// so that agents sharing a host never repeat an IP (the first node gets
// 127.1.0.1 upwards; 127.0.0.0/8 all routes to lo on Linux, so the address
// is reachable but ports are shared with the host); hostNetwork pods get the
// node's address.
//
// /etc/hosts of a pod with a subdomain lists the pods sharing it, on this
// node and (once a second Node exists) on the others, as cluster DNS would.
// The node's InternalIP is the listen
// address (127.0.0.1 by default).
package agent
