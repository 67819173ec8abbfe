package reconciler

import (
	"time"

	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform"
	"ebb.dev/ebb/pkg/platform/kubernetes/resourcemetrics"
	"ebb.dev/ebb/pkg/podfailure"
)

// Options configure a Platform. The embedded platform.Options's Listener
// hears of opted-in Deployments and of config-autoscaler; its errors (an
// invalid ConfigMap or annotation) are reported as Events and log lines.
type Options struct {
	platform.Options
	Client k8s.Interface
	// Recorder writes the Events (nil: through the API, NewEventRecorder).
	Recorder record.EventRecorder
	// Namespace is Ebb's namespace: config-autoscaler, the activator's
	// Service (default config.SystemNamespace).
	Namespace string
	// ConfigMapName is the autoscaler's ConfigMap (default
	// config.ConfigMapName).
	ConfigMapName string
	// ActivatorService is the activator's Service in Namespace (default
	// config.ActivatorName); its ready endpoints are where a revision's Service
	// points while the activator is in the path.
	ActivatorService string
	// QueueServingPort and QueueAdminPort are the queue-proxy's ports in
	// every revision's pods (defaults config.QueueServingPort and
	// config.QueueAdminPort).
	QueueServingPort, QueueAdminPort int32
	// ActivatorPort is the activator's port when its EndpointSlices name
	// no "http" port (default config.ActivatorPort).
	ActivatorPort int32
	// ProbeTimeout bounds one probe of a queue-proxy before the Service
	// points at it (default 300ms; Knative's activator uses the same).
	ProbeTimeout time.Duration
	// ProbeRetry is how soon a revision whose pods did not all answer
	// their probe is reconciled again (default 200ms).
	ProbeRetry time.Duration
	// ScaleBackoff bounds the retries of one scale call on conflicts and
	// API errors (default: 5 tries from 100ms, doubling); the autoscaler
	// retries with its next decision after that.
	ScaleBackoff Backoff
	// StartStall is how long a pod placed on a node may go without any of
	// its containers starting before its revision, waiting for it, is
	// reported (podfailure.Stalled: a Warning Event PodNotStarting and the
	// RevisionAutoscaler's Ready condition; requests keep waiting)
	// (default 15s: a cold start on a ready node takes about a second).
	StartStall time.Duration
	// RecoverSettle is how long a pod of a failing revision must stay
	// ready before the failure is cleared (podfailure.Recovered; default
	// podfailure.RecoverSettle, 30s): a crash loop whose replica is ready for a moment between two
	// crashes keeps its failure, its state and its Events steady. A ready
	// pod of a new pod template clears it at once.
	RecoverSettle time.Duration
	// Resync is the informers' resync period (default 10m).
	Resync time.Duration
	// SyncTimeout bounds the wait for the informers' first lists (default
	// 1m): past it Run fails, so a leader that cannot read the cluster
	// (RBAC) lets go of the Lease instead of holding it idle.
	SyncTimeout time.Duration
	// Workers reconcile Deployments and routes (default 2 each).
	Workers int
	// Metrics is the resource metrics API (metrics.k8s.io/v1beta1) the HPA
	// class reads cpu and memory from (nil: not read; cpu and memory
	// metrics then have no samples).
	Metrics resourcemetrics.Source
	// MetricsPeriod is how often one namespace's PodMetrics are listed
	// (default 15s: metrics-server's resolution and Kubernetes' HPA sync).
	MetricsPeriod time.Duration
	// Now is the clock of MetricsPeriod (default time.Now).
	Now func() time.Time
	// Buckets, when not 0, shares the revisions among autoscaler
	// replicas: a revision is in bucket.Of(NS/NAME, Buckets), and this
	// replica decides only for those of the buckets it holds (Gain,
	// Lose): it feeds them to the listener, owns their Services and
	// routes, and scales them. 0: it decides for every revision.
	Buckets int
	// ConfigEvents, when set, says whether this replica records the
	// ConfigMap's Events (ConfigApplied, ConfigRejected): with several
	// replicas, the elected leader alone does, so each change shows once.
	// Every replica applies the ConfigMap. nil: always.
	ConfigEvents func() bool
	// Removed, when set, hears of each revision this replica decided for
	// that is removed: its Deployment deleted or no longer opted in (the
	// status objects' writer deletes its RevisionAutoscaler).
	Removed func(autoscaler.RevisionKey)
}

// Backoff is a retry schedule: Steps tries, the first after Duration,
// each wait Factor times the previous, up to Cap.
type Backoff struct {
	Duration time.Duration
	Factor   float64
	Steps    int
	Cap      time.Duration
}

func (o *Options) setDefaults() {
	str := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	port := func(v *int32, d int32) {
		if *v == 0 {
			*v = d
		}
	}
	dur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	str(&o.Namespace, config.SystemNamespace)
	str(&o.ConfigMapName, config.ConfigMapName)
	str(&o.ActivatorService, config.ActivatorName)
	port(&o.QueueServingPort, config.QueueServingPort)
	port(&o.QueueAdminPort, config.QueueAdminPort)
	port(&o.ActivatorPort, config.ActivatorPort)
	dur(&o.ProbeTimeout, 300*time.Millisecond)
	dur(&o.ProbeRetry, 200*time.Millisecond)
	dur(&o.StartStall, 15*time.Second)
	dur(&o.RecoverSettle, podfailure.RecoverSettle)
	dur(&o.Resync, 10*time.Minute)
	dur(&o.SyncTimeout, time.Minute)
	dur(&o.MetricsPeriod, 15*time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ScaleBackoff.Steps <= 0 {
		o.ScaleBackoff = Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 5, Cap: 2 * time.Second}
	}
	if o.Workers <= 0 {
		o.Workers = 2
	}
	o.Options.SetDefaults()
}
