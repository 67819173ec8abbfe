// Package learned is the learned scale-to-zero policy
// (config.ScaleToZeroLearned): it learns a revision's idle gaps and
// decides, for every stretch of idle time, whether a replica is worth
// having then (policy.go). The decider (pkg/scaling/decider) drives it through a
// narrow face, and nothing else of it:
//
//   - New: the policy of a revision (nil for another scale-to-zero policy);
//   - Policy.Observe: one second's revision-wide load;
//   - Policy.ObserveReady and Policy.Decided: the ready replicas of each
//     second and the scale decided, for the measure of start-ups;
//   - Policy.Decide: a Verdict (keep, pre-warm, release, or leave it to
//     Knative's rules) with the numbers of its reason;
//   - Policy.State, Policy.Generation and Policy.Restore: the history saved
//     across autoscaler restarts (state.go);
//   - Policy.Lead: the pre-warm lead, for the decider's next wake-up;
//   - Policy.UsePredictor: a variant of the policy's predictor, and
//     Policy.UseComparison: a Comparison (compare.go), a predictor that
//     lives outside the server (pkg/scaling/whatif/compare), to compare with the
//     policy's.
//
// Like the decider it is pure and deterministic: time is passed in.
package learned
