package config

// The wiring names: what Ebb's binaries, its two platforms, the manifests
// of deploy/ and the tests must spell alike to find one another (the
// system namespace, the names of Ebb's own objects, the ports, the
// environment variables one component sets and another reads). Each is
// written here once; a second literal is a drift waiting to happen. The
// flags that let an operator rename an object default to these.
//
// The revision timeouts' variables (EnvRevisionTimeout and its siblings)
// are with the rule that reads them (timeouts.go).

// Ebb's namespace and the names of its own objects (deploy/).
const (
	// SystemNamespace is Ebb's namespace: its Deployments, Services,
	// ConfigMaps, Leases and Secrets.
	SystemNamespace = "ebb-system"
	// AutoscalerName names the autoscaler's Deployment, Service and
	// ServiceAccount, the Lease of its elected leader, the prefix of its
	// bucket and replica Leases, the audience of the activators' stats
	// tokens, and the component of its Events.
	AutoscalerName = "ebb-autoscaler"
	// ActivatorName names the activator's Deployment, Service and
	// ServiceAccount.
	ActivatorName = "ebb-activator"
	// WebhookServiceName is the Service of the sidecar injection webhook
	// (its names are the serving certificate's).
	WebhookServiceName = "ebb-webhook"
	// WebhookSecretName is the Secret holding the webhook's CA and serving
	// certificate.
	WebhookSecretName = "ebb-webhook-certs"
	// WebhookConfigName is the MutatingWebhookConfiguration whose caBundle
	// the webhook keeps current.
	WebhookConfigName = "ebb-sidecar-injector"
	// LearnedStatePrefix makes the names of the ConfigMaps that keep the
	// learned scale-to-zero policy's state on a cluster: PREFIX0, PREFIX1...
	LearnedStatePrefix = "ebb-learned-state-"
)

// Labels on the objects Ebb writes.
const (
	// ManagedByLabel marks the objects Ebb owns (Services, EndpointSlices,
	// its ConfigMaps and Secrets), with the value ManagedBy.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of ManagedByLabel on Ebb's objects.
	ManagedBy = "ebb"
	// PartOfLabel groups Ebb's own objects, with the value ManagedBy.
	PartOfLabel = "app.kubernetes.io/part-of"
	// ComponentLabel says which part of Ebb an object belongs to.
	ComponentLabel = "app.kubernetes.io/component"
)

// Ports and their names.
const (
	// QueueServingPort is the queue-proxy's port for requests (Knative's).
	QueueServingPort = 8012
	// QueueAdminPort is the queue-proxy's port of /stats, /metrics and
	// /healthz.
	QueueAdminPort = 9090
	// ActivatorPort is the activator's port for requests.
	ActivatorPort = 8012
	// AutoscalerAdminPort is the autoscaler's API, dashboard and /metrics.
	AutoscalerAdminPort = 9091
	// ActivatorAdminPort is the activator's /metrics and probes.
	ActivatorAdminPort = 9092
	// AutoscalerStatsPort takes the activators' reports (POST /v1/stats).
	AutoscalerStatsPort = 9093
	// WebhookPort is the autoscaler's sidecar injection webhook.
	WebhookPort = 8443

	// PortNameHTTP names the serving port on Ebb's Services and
	// EndpointSlices (and the autoscaler's admin port on its Service).
	PortNameHTTP = "http"
	// PortNameAdmin names the queue-proxy's admin port.
	PortNameAdmin = "admin"
	// PortNameStats names the autoscaler Service's port of the reports.
	PortNameStats = "stats"
)

// Environment variables one part of Ebb sets and another reads.
const (
	// EnvPodName, EnvPodNamespace and EnvPodIP are the downward API's pod
	// name, namespace and address, as deploy/ and the injected sidecar set
	// them.
	EnvPodName      = "POD_NAME"
	EnvPodNamespace = "POD_NAMESPACE"
	EnvPodIP        = "POD_IP"
	// EnvQueueProxyImage is the queue-proxy image the autoscaler's webhook
	// injects (--webhook-image): deploy/ sets it on the autoscaler, where
	// kustomize's images rewrite it with the others
	// (deploy/kustomizeconfig.yaml).
	EnvQueueProxyImage = "QUEUE_PROXY_IMAGE"
	// EnvPort is the app's port (Knative's contract): the platforms set it
	// on the app, the queue-proxy's EnvUserPort points at it.
	EnvPort = "PORT"

	// The queue-proxy's variables, set by the local platform and by the
	// sidecar injector (pkg/manifest/inject), read by the queue-proxy.
	EnvUserPort              = "USER_PORT"
	EnvQueueServingPort      = "QUEUE_SERVING_PORT"
	EnvQueueAdminPort        = "QUEUE_ADMIN_PORT"
	EnvQueueBindAddress      = "QUEUE_BIND_ADDRESS"
	EnvServingPod            = "SERVING_POD"
	EnvServingRevision       = "SERVING_REVISION"
	EnvContainerConcurrency  = "CONTAINER_CONCURRENCY"
	EnvDrainPeriod           = "DRAIN_PERIOD_SECONDS"
	EnvAwaitAppExit          = "QUEUE_AWAIT_APP_EXIT_SECONDS"
	EnvReadinessProbePath    = "READINESS_PROBE_PATH"
	EnvReadinessProbePeriod  = "READINESS_PROBE_PERIOD_SECONDS"
	EnvReadinessProbeTimeout = "READINESS_PROBE_TIMEOUT_SECONDS"
	EnvReadinessFailures     = "READINESS_FAILURE_THRESHOLD"

	// EnvAutoscalerURL is where an activator reports when it does not
	// learn the autoscalers from the cluster (ACTIVATOR_PLATFORM=file).
	EnvAutoscalerURL = "AUTOSCALER_URL"
	// EnvStatsTokenFile is the activator's projected ServiceAccount token,
	// its credentials for POST /v1/stats.
	EnvStatsTokenFile = "ACTIVATOR_STATS_TOKEN_FILE"
)
