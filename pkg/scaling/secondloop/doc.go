// Package secondloop closes a revision's seconds: it takes the activator
// reports of each second (Inbox), steps the decider through the seconds
// (gaps included), and hands each decision to its caller to publish and
// to apply. The live autoscaler (pkg/autoscaler, on a worker at the
// revision's phase) and `autoscaler whatif` (pkg/scaling/whatif, on a virtual
// clock) both close their seconds through it: one loop, so that what
// whatif predicts is what the live system does.
//
// It owns the rule for late reports. A report carries the second it
// belongs to (SecondOf: by the time it was cut). One that arrives after
// its second was closed is late. When a decision would scale a revision
// from running replicas to zero, the loop holds that decision for
// LateBound closes and keeps a copy of the decider from before it
// (decider.Stepper.CloneInto; built after the second from a mark taken
// before it, decider.Stepper.MarkInto, when it can); a late report that arrives while the hold
// lasts re-decides from there with the report in its own second (in the
// held second when it belongs to an earlier one), so that a report that
// came late never scales a revision to zero in the second its request
// came. Scale-ups and other scale-downs apply at once. Outside a hold, a
// late report counts in the open second.
//
// It is pure: no clock (seconds are passed in), no I/O, no logging. One
// goroutine owns a Loop; an Inbox is guarded by its owner's lock.
package secondloop
