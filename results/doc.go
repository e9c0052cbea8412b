// Package results defines ContainerResult (results.batchlet.dev/v1): the
// record the node agent keeps of every terminated container attempt (exit
// code, reason, timestamps, node and the tail of its log), which outlives
// the pod and its Job. It holds the type, its CustomResourceDefinition's
// coordinates, how a termination becomes a result, and the retention
// decision the results controller applies.
package results
