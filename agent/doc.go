// Package agent is the node agent: it registers a Node, renews its Lease,
// runs the pods bound to it through a runtime.Runtime, writes their status
// as the kubelet does, and serves kubelet-style logs and exec endpoints.
//
// Pod IPs: each pod gets its own loopback address, 127.1.0.1 upwards
// (127.0.0.0/8 all routes to lo on Linux, so the address is reachable but
// ports are shared with the host). The node's InternalIP is the listen
// address (127.0.0.1 by default).
package agent
