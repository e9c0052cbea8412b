package main

import (
	_ "github.com/evanphx/json-patch/v5"
	_ "github.com/gorilla/websocket"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/bbolt"
	_ "k8s.io/api/batch/v1"
	_ "k8s.io/apimachinery/pkg/util/strategicpatch"
	_ "k8s.io/client-go/informers"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/record"
	_ "k8s.io/client-go/tools/remotecommand"
	_ "k8s.io/client-go/util/workqueue"
	_ "k8s.io/kube-openapi/pkg/validation/spec"
	_ "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

func main() {}
