// Command incluster lists the pods of its namespace with client-go's
// in-cluster config, as a controller running in a pod would, and prints
// their count; an error (a 403 without a RoleBinding) fails it.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("in-cluster config: %w", err)
	}
	ns, err := os.ReadFile(namespaceFile)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pods, err := client.CoreV1().Pods(strings.TrimSpace(string(ns))).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Printf("pods in %s: %d\n", ns, len(pods.Items))
	return nil
}
