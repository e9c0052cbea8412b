// Package defaults applies upstream's API defaults (the SetDefaults_* functions
// of kube-apiserver, the admission defaults it adds to pods, and the JobSet
// mutating webhook) to objects. Every function mutates only its argument.
package defaults
