// Package workqueue is batchlet's built-in work queue for the two queue
// patterns of the Job docs ("coarse" and "fine parallel processing using a
// work queue") without Redis or RabbitMQ.
//
// A Job opts in with the pod-template annotation batchlet.dev/work-queue:
// configmap/NAME (one item per key, in key order) or configmap/NAME/KEY
// (one item per non-empty line of that key). The node agent, when it
// starts the first pod of such a Job, snapshots the items into a WorkQueue
// (workqueues.batchlet.dev/v1, named after the Job and owned by it), and
// gives every pod BATCHLET_QUEUE_URL: a tiny HTTP API the agent serves on
// the pod's own loopback address, with a per-pod secret in the path.
//
//	POST $BATCHLET_QUEUE_URL/lease            200 item (Batchlet-Lease, Batchlet-Item, Batchlet-Attempt headers)
//	                                          204 every item is complete: the worker exits
//	                                          503 the remaining items are all leased: retry (Retry-After)
//	POST $BATCHLET_QUEUE_URL/complete/LEASE   200 done; 410 the lease is gone (released or completed)
//	POST $BATCHLET_QUEUE_URL/release/LEASE    200 the item goes back to the queue
//	GET  $BATCHLET_QUEUE_URL                  the queue's counts (JSON)
//
// All progress (completed items, outstanding leases) lives in the
// WorkQueue object and every change is one optimistic-concurrency update
// through the API, so it survives a server restart and an item is never
// completed twice. The leases of a pod that ends (any phase) or is deleted
// go back to the queue.
package workqueue
