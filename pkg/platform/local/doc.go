// Package local is Ebb's platform for one machine. It reads the same
// manifests a cluster would get (a config-autoscaler ConfigMap and
// Deployments opted in with the label autoscaling.ebb.dev/enabled: "true",
// and Knative Services and Configurations, read by pkg/manifest as the
// Deployments Ebb runs for them: their timeouts go to each replica's
// queue-proxy and to the activator; a field Ebb cannot honour fails the
// load, as an invalid annotation does),
// polls them for changes, and runs each replica of a revision as two local
// processes: the first container's command (with PORT set to a free
// loopback port) and an Ebb queue-proxy in front of it, listening on
// 127.0.0.1 only (QUEUE_BIND_ADDRESS) and given its namespace's proxy
// secret (ACTIVATOR_PROXY_SECRET: stats.NamespaceProxySecret of the
// platform's per-run secret, which the embedded activator gets through
// ProxySecret). The image is ignored.
//
// It implements the autoscaler's Platform (ready pods, scale, activator in
// path) and the activator's Platform (revisions and their replicas' queue-
// proxy addresses). Locally every request enters through the activator, so
// "activator in path" is recorded but changes no route.
//
// Processes: each child runs in its own process group and gets SIGKILL if
// the autoscaler dies (Linux parent-death signal), so no replica outlives
// it. A replica stops in order: it leaves the activator's replica list,
// its queue-proxy gets SIGTERM and drains, then the app gets SIGTERM, and
// whatever is left of both groups gets SIGKILL after the stop timeout. A
// replica whose process exits on its own is replaced, with exponential
// back-off between crashes.
//
// Each revision has one supervisor goroutine that owns its replicas; the
// mutex of the platform guards only the snapshot that readers see.
package local
