// Package leader decides which autoscaler replica does what, with
// coordination.k8s.io Leases in Ebb's namespace:
//
//   - Run elects the one leader (the Lease ebb-autoscaler) of the work
//     done once per cluster (the webhook's certificates).
//   - Buckets shares the revisions out: each replica keeps a Lease of its
//     own while it lives (PREFIX-replica-POD, with its addresses), and
//     holds some of the bucket Leases (PREFIX-bucket-I-of-N, package
//     bucket) as its share; its Holder decides for the revisions of the
//     buckets it holds. A dead replica's buckets go to the others once
//     its Leases expire, a stopping one gives its own up at once, and one
//     that joins takes its share from the others, one bucket at a time.
//     Replicas of two bucket counts (a --buckets rollout) never decide one
//     revision both (bucket.Decide). Buckets is the fence.Keeper of every
//     write a holder makes for its buckets' revisions (Hold: admitted
//     while the fence is open, with the time it has left as its
//     deadline), and a bucket let go is released only once the writes in
//     flight ended.
//
// Both judge expiry on this replica's clock from when a Lease was last
// seen to change, never from a time written in it. They decide nothing
// about revisions; what a replica does with what it leads or holds is
// the caller's.
package leader
