// Package podfailure decides whether a revision's pods cannot start, and
// says why in words a user can act on: an image that cannot be pulled, a
// container that exits at start, a container the kubelet cannot create,
// pods the Deployment cannot create, or a rollout past its progress
// deadline. Kubernetes reports each of these on a pod's container
// statuses (their waiting reason and last termination) or on the
// Deployment's conditions; the platform reads them (the I/O) and passes
// them here as plain values.
//
// # What it owns
//
// Classify: pods and conditions (and what it said last) in, a Failure (machine-readable Reason,
// a crash named as it was: at start, after serving, killed for memory;
// the kubelet's Cause, a Message naming the revision's image or container,
// the cause and the fix) or none out. The activator answers the requests
// it holds for a failing revision with it; the autoscaler shows it as an
// Event and in the RevisionAutoscaler's status. Stalled: pods placed on a
// node that starts none of their containers within a bound (now passed
// in), a Pending failure reported while requests wait.
//
// # What it must not do
//
// It is pure: no clock, no I/O, no Kubernetes types (it is in the pure
// tier of hack/checkimports).
package podfailure
