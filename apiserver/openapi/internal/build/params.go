package build

import "k8s.io/kube-openapi/pkg/common"

func query(name, dataType, desc string) param {
	return param{name: name, desc: desc, kind: common.QueryParameterKind, dataType: dataType}
}

func pathParam(name, desc string) param {
	return param{name: name, desc: desc, required: true, kind: common.PathParameterKind, dataType: "string"}
}

var (
	pPretty    = query("pretty", "string", "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).")
	pNamespace = pathParam("namespace", "object name and auth scope, such as for teams and projects")
	pBody      = param{name: "body", required: true, kind: common.BodyParameterKind, dataType: "object"}
	pBodyOpt   = param{name: "body", kind: common.BodyParameterKind, dataType: "object"}

	pDryRun          = query("dryRun", "string", "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed")
	pFieldManager    = query("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.")
	pFieldValidation = query("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.")
	pForce           = query("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.")
	pGracePeriod     = query("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.")
	pOrphan          = query("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.")
	pPropagation     = query("propagationPolicy", "string", "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.")
	pBookmarks       = query("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion.")
	pContinue        = query("continue", "string", "The continue option should be set when retrieving more results from the server. The value is an opaque token returned by a previous list call with a limit.")
	pFieldSelector   = query("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything.")
	pLabelSelector   = query("labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything.")
	pLimit           = query("limit", "integer", "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata.")
	pResourceVersion = query("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from. Defaults to unset.")
	pRVMatch         = query("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls. Defaults to unset.")
	pInitialEvents   = query("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection.")
	pTimeoutSeconds  = query("timeoutSeconds", "integer", "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.")
	pWatch           = query("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.")
	pLogContainer    = query("container", "string", "The container for which to stream logs. Defaults to only container if there is one container in the pod.")
	pLogFollow       = query("follow", "boolean", "Follow the log stream of the pod. Defaults to false.")
	pLogLimitBytes   = query("limitBytes", "integer", "If set, the number of bytes to read from the server before terminating the log output.")
	pLogPrevious     = query("previous", "boolean", "Return previous terminated container logs. Defaults to false.")
	pLogSinceSeconds = query("sinceSeconds", "integer", "A relative time in seconds before the current time from which to show logs.")
	pLogTailLines    = query("tailLines", "integer", "If set, the number of lines from the end of the logs to show.")
	pLogTimestamps   = query("timestamps", "boolean", "If true, add an RFC3339 or RFC3339Nano timestamp at the beginning of every line of log output. Defaults to false.")
	pExecCommand     = param{name: "command", desc: "Command is the remote command to execute. argv array. Not executed within a shell.", kind: common.QueryParameterKind, dataType: "string", multiple: true}
	pExecContainer   = query("container", "string", "Container in which to execute the command. Defaults to only container if there is only one container in the pod.")
	pExecStderr      = query("stderr", "boolean", "Redirect the standard error stream of the pod for this call.")
	pExecStdin       = query("stdin", "boolean", "Redirect the standard input stream of the pod for this call. Defaults to false.")
	pExecStdout      = query("stdout", "boolean", "Redirect the standard output stream of the pod for this call.")
	pExecTTY         = query("tty", "boolean", "TTY if true indicates that a tty will be allocated for the exec call. Defaults to false.")
	pAttachContainer = query("container", "string", "The container in which to execute the command. Defaults to only container if there is only one container in the pod.")
	pAttachStderr    = query("stderr", "boolean", "Stderr if true indicates that stderr is to be redirected for the attach call. Defaults to true.")
	pAttachStdin     = query("stdin", "boolean", "Stdin if true, redirects the standard input stream of the pod for this call. Defaults to false.")
	pAttachStdout    = query("stdout", "boolean", "Stdout if true indicates that stdout is to be redirected for the attach call. Defaults to true.")
	pAttachTTY       = query("tty", "boolean", "TTY if true indicates that a tty will be allocated for the attach call. This is passed through the container runtime so the tty is allocated on the worker node by the container runtime. Defaults to false.")
	pProxyPath       = query("path", "string", "Path is the URL path to use for the current proxy request to node.")
)

func params(ps ...param) []common.Parameter {
	out := make([]common.Parameter, len(ps))
	for i, p := range ps {
		out[i] = p
	}
	return out
}

func listParams() []param {
	return []param{pPretty, pBookmarks, pContinue, pFieldSelector, pLabelSelector, pLimit, pResourceVersion, pRVMatch, pInitialEvents, pTimeoutSeconds, pWatch}
}

func writeParams() []param {
	return []param{pPretty, pBody, pDryRun, pFieldManager, pFieldValidation}
}

func patchParams() []param {
	return append(writeParams(), pForce)
}

func deleteParams() []param {
	return []param{pPretty, pBodyOpt, pDryRun, pGracePeriod, pOrphan, pPropagation}
}

func deleteCollectionParams() []param {
	return append(deleteParams(), pContinue, pFieldSelector, pLabelSelector, pLimit, pResourceVersion, pRVMatch, pInitialEvents, pTimeoutSeconds)
}

func logParams() []param {
	return []param{pPretty, pLogContainer, pLogFollow, pLogLimitBytes, pLogPrevious, pLogSinceSeconds, pLogTailLines, pLogTimestamps}
}

func attachParams() []param {
	return []param{pAttachContainer, pAttachStderr, pAttachStdin, pAttachStdout, pAttachTTY}
}

func execParams() []param {
	return []param{pExecCommand, pExecContainer, pExecStderr, pExecStdin, pExecStdout, pExecTTY}
}
