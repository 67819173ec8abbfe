// Package k8s holds Ebb's integration tests on a real control plane (the
// testbed, hack/testbed.sh; docs/kubernetes.md, "Tests"). They carry the
// build tag k8s and run with `make test-k8s`:
//
//	hack/testbed.sh run -- go test -tags k8s -count=1 ./test/k8s/...
//
// The testbed has no kubelet: kwok marks pods Running and Ready with an
// address. A small kubelet in the tests (kubelet_test.go) runs each pod's
// containers as local processes bound to the pod's address: Ebb's
// autoscaler and activator from deploy/ with their ServiceAccounts'
// tokens, and each revision's app and queue-proxy. There is no kube-proxy
// either: clients dial the addresses of a Service's EndpointSlices, as a
// client-side load balancer would.
package k8s
