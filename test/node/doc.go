// Package node holds Ebb's end-to-end tests on the testbed's real node
// (hack/testbed.sh up --real-node: containerd, runc, a CNI bridge, a
// kubelet and kube-proxy; docs/testbed.md). They carry the build tag node
// and run with `make test-node` (hack/test-node.sh), which builds the
// images (make images), brings up the testbed with the real node, installs
// Ebb as docs/kubernetes.md's Install section says (make deploy), and then
// runs, inside the testbed's namespace:
//
//	go test -tags node -count=1 -v ./test/node/
//
// Every pod is a real container: the webhook injects the queue-proxy, the
// kubelet probes it and sends SIGTERM on deletion, kube-proxy routes the
// Services. Clients dial ClusterIPs as a pod would. Timings are reported
// (t.Log, and the summary lines starting with "node:"), never asserted;
// what is asserted is correctness: status codes, request and replica
// counts.
package node
