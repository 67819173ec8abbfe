// Package revisionstatus shows each revision's scaling in the API server:
// one RevisionAutoscaler (autoscaling.ebb.dev/v1alpha1, short name ra,
// deploy/kubernetes/revisionautoscaler-crd.yaml) per revision, named as
// its Deployment, whose status is what `autoscaler status` prints, so that
// `kubectl get ra` and `kubectl describe ra` show it as `kubectl get kpa`
// and `kubectl get hpa` do.
//
// The object is output only: Ebb never reads it (the annotations stay
// the one place of configuration), and deleting it is harmless (it is
// written again at the next change). It goes with its revision: it is
// owned by the Deployment (an owner reference, so that Kubernetes'
// garbage collector deletes it with the Deployment, even while Ebb is
// down), and the writer deletes it when the revision is removed
// (Writer.Forget: the Deployment deleted, or its opt-in label removed,
// which the garbage collector cannot see). Each replica of the autoscaler
// writes the revisions it decides for (its buckets), only when what is
// shown changed, and at most Options.Limit writes a second: the latest
// state of a revision waits for a token, its older states are never
// written.
package revisionstatus

import (
	"context"
	"errors"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"encoding/json"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/platform/kubernetes/fence"
	"ebb.dev/ebb/pkg/podfailure"
	"ebb.dev/ebb/pkg/scaling/decider"
)

// GVR is the RevisionAutoscaler resource.
var GVR = schema.GroupVersionResource{Group: "autoscaling.ebb.dev", Version: "v1alpha1", Resource: "revisionautoscalers"}

// Kind is the RevisionAutoscaler's kind.
const Kind = "RevisionAutoscaler"

// fieldManager names Ebb's writes in the objects' managed fields.
const fieldManager = config.AutoscalerName

// Options configure a Writer.
type Options struct {
	Client dynamic.Interface
	// Summaries calls its argument with the latest decision of every
	// revision this replica decides for (autoscaler.Autoscaler.EachSummary);
	// Status is a revision's whole status, asked for the revisions to
	// write (autoscaler.Autoscaler.StatusOf).
	Summaries func(func(autoscaler.Summary))
	Status    func(autoscaler.RevisionKey) (autoscaler.Status, bool)
	// Failure says whether a revision's pods cannot start, and why (the
	// platform's reconciler.Platform.Failure); the condition Ready is
	// then False with the failure's reason and message. nil: never.
	Failure func(autoscaler.RevisionKey) (podfailure.Failure, bool)
	// Parking says how the platform's parking of a revision's replica
	// goes (the platform's reconciler.Platform.ParkStatus): shown as the
	// status's parking, and a change of it is written. nil: never.
	Parking func(autoscaler.RevisionKey) (autoscaler.ParkStatus, bool)
	// Owner is the UID of a revision's Deployment, when it exists with the
	// opt-in label (the platform's cache): the object's owner reference.
	// A revision without one is not written (it is being removed), and a
	// forgotten revision that has one again is not deleted. Nil: objects
	// without an owner reference (tests).
	Owner func(autoscaler.RevisionKey) (types.UID, bool)
	// Refresh is how often a revision whose counts, state and reasons
	// stay the same has its metric value and excess burst capacity
	// rewritten (default 30s): they move with every second of traffic,
	// and writing them each time would spend the write budget on them.
	Refresh time.Duration
	// Interval is how often the statuses are compared (default 1s: a
	// change is written within a second and a half, tokens allowing).
	Interval time.Duration
	// Fence holds each status write to the revision's bucket (leader.Buckets),
	// and BucketOf is a revision's bucket: a write goes only while this
	// replica holds it, checked again as it is sent (fence.Transport). nil:
	// not fenced (a single replica, tests).
	Fence    fence.Keeper
	BucketOf func(autoscaler.RevisionKey) int
	// Limit and Burst bound the writes to the API server (default 20/s,
	// burst 100).
	Limit rate.Limit
	Burst int
	Log   *zap.Logger
	// Now is the clock of the conditions' transition times (default
	// time.Now).
	Now func() time.Time
}

// Writer writes the RevisionAutoscalers' status. Constructors start
// nothing; Run does.
type Writer struct {
	o       Options
	limiter *rate.Limiter
	writes  atomic.Uint64 // API requests made (patches and creates)
	waiting atomic.Int64  // changed revisions the last Sync left for lack of a token

	// Owned by Run's goroutine.
	written map[autoscaler.RevisionKey]*shown

	mu   sync.Mutex
	gone map[autoscaler.RevisionKey]struct{} // removed revisions whose objects are to be deleted
}

// shown is what was last written of a revision.
type shown struct {
	status      Status
	initialized bool // ScaleTargetInitialized: a replica was ready once
	print       fingerprint
	value       float64   // the metric value written, in hundredths
	at          time.Time // when it was written
}

// fingerprint is what of a revision's status makes a write at once: its
// counts, routing, state and reasons (not the metric value nor the excess
// burst capacity, refreshed every Options.Refresh). It is compared without
// building the status.
type fingerprint struct {
	desired, recommended, ready int32
	panic, activator, resting   bool
	hasData                     bool
	state                       uint8
	reasons                     uint64
	failure                     string // the start failure's reason and container ("": none)
	parked                      bool
	parking                     autoscaler.ParkStatus
}

func fingerprintOf(s *autoscaler.Summary, f *podfailure.Failure) fingerprint {
	fp := fingerprint{desired: s.Desired, recommended: s.Recommended, ready: s.Ready, panic: s.Panic, activator: s.ActivatorInPath,
		resting: s.Resting, hasData: s.HasData, state: uint8(s.State), reasons: s.Reasons, parked: s.Parked}
	if f != nil {
		fp.failure = f.Reason + "/" + f.Container
	}
	return fp
}

// failureOf is the revision's start failure (nil: none).
func (w *Writer) failureOf(key autoscaler.RevisionKey) *podfailure.Failure {
	if w.o.Failure == nil {
		return nil
	}
	if f, ok := w.o.Failure(key); ok {
		return &f
	}
	return nil
}

// centis is a metric value as shown: in hundredths.
func centis(v float64) float64 { return math.Round(v * 100) }

// New returns a Writer.
func New(o Options) *Writer {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Refresh <= 0 {
		o.Refresh = 30 * time.Second
	}
	if o.Limit <= 0 {
		o.Limit = 20
	}
	if o.Burst <= 0 {
		o.Burst = 100
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Writer{o: o, limiter: rate.NewLimiter(o.Limit, o.Burst), written: map[autoscaler.RevisionKey]*shown{},
		gone: map[autoscaler.RevisionKey]struct{}{}}
}

// Writes is how many API requests the writer made.
func (w *Writer) Writes() uint64 { return w.writes.Load() }

// Waiting is how many changed revisions the last Sync left unwritten for
// lack of a token (written by a later one).
func (w *Writer) Waiting() int64 { return w.waiting.Load() }

// Forget says that a revision was removed (its Deployment deleted, or no
// longer opted in): a later Sync deletes its object, within the write
// budget, unless the revision is back by then. Safe for concurrent use.
func (w *Writer) Forget(key autoscaler.RevisionKey) {
	w.mu.Lock()
	w.gone[key] = struct{}{}
	w.mu.Unlock()
}

// deleteGone deletes the objects of the revisions Forget named, as long as
// the rate limit has tokens (the others wait for the next Sync).
func (w *Writer) deleteGone(ctx context.Context) {
	w.mu.Lock()
	keys := make([]autoscaler.RevisionKey, 0, len(w.gone))
	for k := range w.gone {
		keys = append(keys, k)
	}
	w.mu.Unlock()
	for _, k := range keys {
		if ctx.Err() != nil {
			return
		}
		if w.o.Owner != nil {
			if _, back := w.o.Owner(k); back {
				w.done(k) // opted in again, or made anew: its object stays (adopted at its next write)
				continue
			}
		}
		if !w.limiter.Allow() {
			return
		}
		// The deletion is a write for the revision: fenced by its bucket.
		// Refused (the bucket is another replica's now), it waits: the
		// next Sync tries again, and the bucket's holder has it to do.
		wctx := w.fenced(ctx, k)
		if fence.Check(wctx) != nil {
			continue
		}
		w.writes.Add(1)
		err := w.o.Client.Resource(GVR).Namespace(k.Namespace).Delete(wctx, k.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			w.o.Log.Debug("deleting a removed revision's RevisionAutoscaler failed", zap.Stringer("revision", k), zap.Error(err))
			continue // tried again at the next Sync
		}
		delete(w.written, k)
		w.done(k)
	}
}

// done takes a revision off the deletions to make.
func (w *Writer) done(k autoscaler.RevisionKey) {
	w.mu.Lock()
	delete(w.gone, k)
	w.mu.Unlock()
}

// Run compares and writes every Interval until ctx ends. Without the
// RevisionAutoscaler resource (deploy/ not applied whole) it says so once
// and stops: scaling does not depend on it.
func (w *Writer) Run(ctx context.Context) error {
	t := time.NewTicker(w.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := w.sync(ctx); err != nil {
				w.o.Log.Warn("no RevisionAutoscaler status is written: the resource is not installed (apply "+
					"deploy/kubernetes/revisionautoscaler-crd.yaml)", zap.Error(err))
				return nil
			}
		}
	}
}

// errNoResource is a create refused because the resource does not exist.
type errNoResource struct{ error }

// SetFence sets Options.Fence and Options.BucketOf; call it before Run.
func (w *Writer) SetFence(k fence.Keeper, bucketOf func(autoscaler.RevisionKey) int) {
	w.o.Fence, w.o.BucketOf = k, bucketOf
}

// fenced is ctx for writing key's status: fence.For its bucket.
func (w *Writer) fenced(ctx context.Context, key autoscaler.RevisionKey) context.Context {
	if w.o.Fence == nil || w.o.BucketOf == nil {
		return ctx
	}
	return fence.For(ctx, w.o.Fence, w.o.BucketOf(key))
}

// sync writes the revisions whose shown status changed, as long as the
// rate limit has tokens; the others wait for the next Sync. It fails only
// when the resource is not installed.
func (w *Writer) sync(ctx context.Context) error {
	w.deleteGone(ctx)
	now := w.o.Now()
	waiting := int64(0)
	var fatal error
	w.o.Summaries(func(sum autoscaler.Summary) {
		if fatal != nil || ctx.Err() != nil {
			return
		}
		prev := w.written[sum.Key]
		failure := w.failureOf(sum.Key)
		print := fingerprintOf(&sum, failure)
		if w.o.Parking != nil {
			print.parking, _ = w.o.Parking(sum.Key)
		}
		if prev != nil && prev.print == print && (now.Sub(prev.at) < w.o.Refresh || prev.value == centis(sum.Stable)) {
			return // nothing to show, or only the value, refreshed later
		}
		if w.o.Owner != nil {
			if _, ok := w.o.Owner(sum.Key); !ok {
				return // being removed (Forget deletes its object): no token spent on it
			}
		}
		wctx := w.fenced(ctx, sum.Key)
		if err := fence.Check(wctx); err != nil {
			w.o.Log.Debug("not writing a RevisionAutoscaler's status", zap.Stringer("revision", sum.Key), zap.Error(err))
			return // its bucket's holder writes it (no token spent)
		}
		if !w.limiter.Allow() {
			waiting++
			return // its newest state is written once a token is free (nothing built before)
		}
		st, ok := w.o.Status(sum.Key)
		if !ok {
			return
		}
		next := statusOf(st, failure, prev, now)
		if err := w.write(wctx, sum.Key, &next, prev == nil); err != nil {
			if err == errNoOwner {
				return // being removed: Forget deletes its object
			}
			if _, ok := err.(errNoResource); ok {
				fatal = err
				return
			}
			w.o.Log.Debug("writing a RevisionAutoscaler's status failed", zap.Stringer("revision", sum.Key), zap.Error(err))
			return
		}
		w.written[sum.Key] = &shown{status: next, initialized: next.initialized, print: print, value: centis(sum.Stable), at: now}
	})
	w.waiting.Store(waiting)
	return fatal
}

// valueOf is the metric value as the status shows it.
func valueOf(st *autoscaler.Status) string {
	if !st.HasData {
		return ""
	}
	return strconv.FormatFloat(centis(st.Stable)/100, 'f', 2, 64)
}

// errNoOwner: the revision's Deployment is not in the cache (it is being
// removed); nothing is written.
var errNoOwner = errors.New("the revision's Deployment is gone")

// write patches the status; the object is created first when this
// writer has not written it yet (fresh: it exists after a restart) or is
// missing (deleted by someone). A created object is owned by the
// revision's Deployment; one that existed already is given that owner
// (an object of an earlier Deployment of the same name, or of an Ebb
// without owner references).
func (w *Writer) write(ctx context.Context, key autoscaler.RevisionKey, s *Status, fresh bool) error {
	var owners []metav1.OwnerReference
	if w.o.Owner != nil {
		uid, ok := w.o.Owner(key)
		if !ok {
			return errNoOwner
		}
		owners = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: key.Name, UID: uid}}
	}
	body, err := json.Marshal(map[string]any{"status": s})
	if err != nil {
		return err
	}
	res := w.o.Client.Resource(GVR).Namespace(key.Namespace)
	if !fresh {
		w.writes.Add(1)
		_, err = res.Patch(ctx, key.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: fieldManager}, "status")
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion(GVR.GroupVersion().String())
	obj.SetKind(Kind)
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	obj.SetLabels(map[string]string{config.ManagedByLabel: config.ManagedBy})
	obj.SetOwnerReferences(owners)
	w.writes.Add(1)
	_, err = res.Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManager})
	switch {
	case apierrors.IsAlreadyExists(err) && owners != nil:
		adopt, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": owners}})
		if err != nil {
			return err
		}
		w.writes.Add(1)
		if _, err := res.Patch(ctx, key.Name, types.MergePatchType, adopt, metav1.PatchOptions{FieldManager: fieldManager}); err != nil {
			return err
		}
	case apierrors.IsAlreadyExists(err):
	case apierrors.IsNotFound(err):
		return errNoResource{err}
	case err != nil:
		return err
	}
	w.writes.Add(1)
	_, err = res.Patch(ctx, key.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: fieldManager}, "status")
	return err
}

// Status is a RevisionAutoscaler's status: the printer columns' fields,
// the conditions, and the last decision's reasons.
type Status struct {
	Class               string `json:"class"`
	Metric              string `json:"metric"`
	MetricValue         string `json:"metricValue"` // the stable average, 2 decimals ("" before data)
	Target              string `json:"target"`
	DesiredReplicas     int32  `json:"desiredReplicas"`
	RecommendedReplicas int32  `json:"recommendedReplicas"`
	ReadyReplicas       int32  `json:"readyReplicas"`
	Panic               bool   `json:"panic"`
	ActivatorInPath     bool   `json:"activatorInPath"`
	ExcessBurstCapacity int32  `json:"excessBurstCapacity"`
	State               string `json:"state"`
	// Parking is how the platform's parking of the replica goes; nil
	// when it says nothing.
	Parking *autoscaler.ParkStatus `json:"parking,omitempty"`
	// Failure is the reason its pods are failing (podfailure's: a pull
	// that fails, a crash at start, a crash after serving, an OOM kill;
	// "" for none), the wide view's column beside State.
	Failure     string      `json:"failure"` // "" written too: a merge patch must clear it
	Conditions  []Condition `json:"conditions"`
	LastReasons []reason    `json:"lastReasons,omitempty"`

	initialized bool
}

// Condition is one condition, as Kubernetes' API conventions write them.
type Condition struct {
	Type               string `json:"type"`
	Status             string `json:"status"`
	Reason             string `json:"reason,omitempty"`
	Message            string `json:"message,omitempty"`
	LastTransitionTime string `json:"lastTransitionTime"`
}

// reason is one reason of the last decision.
type reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// statusOf is the status shown for st and its start failure (nil: none);
// prev (nil: none) keeps the conditions' transition times and whether a
// replica was ever ready.
func statusOf(st autoscaler.Status, failure *podfailure.Failure, prev *shown, now time.Time) Status {
	s := Status{Class: st.Class, Metric: st.Metric, Target: strconv.FormatFloat(st.Target, 'f', 2, 64),
		DesiredReplicas: st.Desired, RecommendedReplicas: st.Recommended, ReadyReplicas: st.Ready, Panic: st.Panic,
		ActivatorInPath: st.ActivatorInPath, ExcessBurstCapacity: st.EBC, State: st.State, Parking: st.Parking}
	s.MetricValue = valueOf(&st)
	s.initialized = st.Ready > 0 || (prev != nil && prev.initialized)
	for _, r := range st.Reasons {
		s.LastReasons = append(s.LastReasons, reason{Code: r.Code, Message: r.Message})
	}
	active := st.State == "active"
	cond := func(typ string, ok bool, reason, msg string) Condition {
		c := Condition{Type: typ, Status: "False", Reason: reason, Message: msg}
		if ok {
			c.Status = "True"
		}
		return c
	}
	activeReason, activeMsg := "Active", "the revision has traffic"
	if !active {
		activeReason, activeMsg = "NoTraffic", "the revision is "+st.State
	}
	init := cond("ScaleTargetInitialized", s.initialized, "", "")
	if !s.initialized {
		init.Reason, init.Message = "NotInitialized", "no replica has been ready yet"
	}
	ready := st.Ready >= st.Desired && s.initialized || st.Desired == 0
	readyCond := cond("Ready", ready, "", "")
	if !ready {
		readyCond.Reason = "NotReady"
		readyCond.Message = strconv.Itoa(int(st.Ready)) + " of " + strconv.Itoa(int(st.Desired)) + " desired replicas are ready"
	}
	if failure != nil { // its pods are failing: said whatever the counts
		readyCond = Condition{Type: "Ready", Status: "False", Reason: failure.Reason, Message: failure.Summary() + ": " + failure.Message}
		s.Failure = failure.Reason
	}
	s.Conditions = []Condition{cond("Active", active, activeReason, activeMsg), init, readyCond}
	for _, c := range st.Conditions { // the HPA class: AbleToScale, ScalingActive, ScalingLimited
		s.Conditions = append(s.Conditions, Condition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
	}
	if len(st.Conditions) == 0 && st.Class != "" { // the KPA class says the same in the HPA's words
		s.Conditions = append(s.Conditions, kpaHPAConditions(st)...)
	}
	stamp := now.UTC().Format(time.RFC3339)
	for i := range s.Conditions {
		c := &s.Conditions[i]
		c.LastTransitionTime = stamp
		if prev == nil {
			continue
		}
		for _, p := range prev.status.Conditions {
			if p.Type == c.Type && p.Status == c.Status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return s
}

// kpaHPAConditions are the HPA's conditions of a KPA revision's decision:
// it can scale, its metric is read (ScalingActive False at zero, as the HPA
// says when scaling is disabled), and whether a bound limited it.
func kpaHPAConditions(st autoscaler.Status) []Condition {
	c := []Condition{{Type: decider.ConditionAbleToScale, Status: "True", Reason: "ReadyForNewScale",
		Message: "the autoscaler can scale the revision"}}
	if st.Desired == 0 {
		c = append(c, Condition{Type: decider.ConditionScalingActive, Status: "False", Reason: "ScaledToZero",
			Message: "the revision is at zero; the activator wakes it"})
	} else {
		c = append(c, Condition{Type: decider.ConditionScalingActive, Status: "True", Reason: "ValidMetricFound",
			Message: "the autoscaler reads the " + st.Metric + " metric"})
	}
	limited := Condition{Type: decider.ConditionScalingLimited, Status: "False", Reason: "DesiredWithinRange",
		Message: "the desired count is within the acceptable range"}
	for _, r := range st.Reasons {
		switch decider.Code(r.Code) {
		case decider.MaxScale, decider.MinScale, decider.ScaleUpRateLimited, decider.ScaleDownRateLimited:
			limited = Condition{Type: decider.ConditionScalingLimited, Status: "True", Reason: r.Code, Message: r.Message}
		}
	}
	return append(c, limited)
}
