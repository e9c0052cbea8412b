// Package query reads request query parameters by the rules kube-apiserver
// applies through apimachinery's parameter conversion, so every client
// spelling works here as it does there: the Python client's watch=True,
// client-go's watch=true, curl's watch=1.
package query

import (
	"net/url"

	"k8s.io/apimachinery/pkg/runtime"
)

// Bool is the value of the boolean parameter key, by apimachinery's rule
// (runtime.Convert_Slice_string_To_bool): absent, "0" and "false" in any
// case are false; anything else, the empty string included, is true.
func Bool(q url.Values, key string) bool {
	values := q[key]
	var b bool
	// The conversion never fails; it only reads the first value.
	_ = runtime.Convert_Slice_string_To_bool(&values, &b, nil)
	return b
}

// OptionalBool is Bool for a parameter whose absence means "not set"
// (sendInitialEvents, orphanDependents): nil when key is absent.
func OptionalBool(q url.Values, key string) *bool {
	if len(q[key]) == 0 {
		return nil
	}
	b := Bool(q, key)
	return &b
}

// DryRun: the request asks for a dry run (dryRun=All), which validates
// and answers without storing anything.
func DryRun(q url.Values) bool {
	for _, v := range q["dryRun"] {
		if v == "All" {
			return true
		}
	}
	return false
}
