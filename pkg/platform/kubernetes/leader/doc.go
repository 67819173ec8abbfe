// Package leader decides which autoscaler replica does what, with
// coordination.k8s.io Leases: Run elects the one leader (the Lease
// ebb-autoscaler) of the work done once per cluster.
//
// It decides nothing about revisions and reads no other object; what a
// replica does while it leads is the caller's (a function it runs).
package leader
