// Package learnedstore keeps the learned scale-to-zero policy's state on
// a cluster (Store, an autoscaler.LearnedStore): eight ConfigMaps
// ebb-learned-state-N in Ebb's namespace, a revision's entry in the shard
// its key hashes to, one write per shard per batch.
//
// It writes only those ConfigMaps (which the Role grants by name) and
// reads nothing else but them.
package learnedstore
