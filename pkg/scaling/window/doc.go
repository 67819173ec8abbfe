// Package window keeps the metric windows the decider reads: one-second
// buckets averaged linearly or with weighted-exponential decay, and a
// max-over-window used for the scale-down delay.
//
// It owns only arithmetic over recorded values. Every call takes the time it
// is about; nothing here reads a clock, logs or locks, and a Buckets
// allocates only its ring, when a run of data starts (Trim lets go of it
// once the window is empty). A Buckets or MaxWindow has one owner (the decider that holds it).
//
// Semantics are Knative Serving's (pkg/autoscaler/aggregation) as restated in
// the scenario format spec: for a window of N seconds at second t, with L the
// last recorded second and F the first second of the current run of data,
//
//   - linear: 0 if t-L >= N, else the sum of the recorded values of seconds
//     max(F, t-N+1)..L divided by min(L-F+1, N-(t-L)), rounded to 6 decimals;
//   - weighted exponential: the sum over seconds s in (t-N, L] of
//     v(s)*m*(1-m)^(t-s) with m = max(1-0.0001^(1/N), 0.2), 0 if t-L > N.
//
// F is reset to s when a value for second s arrives N or more seconds after
// the previous recorded second.
package window
