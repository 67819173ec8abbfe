// Package fleetapi is the autoscaler's HTTP surface when several replicas
// share the revisions (on a cluster, by bucket: package bucket):
//
//   - the reports' gate (Gate): a replica takes a bucket's reports only
//     while it holds the bucket, and refuses the others with 421
//     Misdirected Request before taking anything of them, so that the
//     activator sends them to the holder instead and no report is taken
//     twice; a bucket let go waits for the reports being taken;
//   - the API (API): any replica answers for every revision. A
//     revision's questions (its decisions, its chart, its dashboard
//     stream) go to the replica that decides for it; the list of
//     revisions gathers every replica's.
//
// It decides nothing and knows no platform: who holds which bucket comes
// from an Owners (the Kubernetes platform's bucket Leases), wired in
// cmd/autoscaler. One replica alone (autoscaler run on a laptop) needs
// none of it.
package fleetapi
