// Package whatif runs `autoscaler whatif`: a closed-loop simulation of one
// revision on request arrivals, on a virtual clock.
//
// It owns the trace formats (the Azure Functions 2019 per-minute CSV files),
// the arrival model (a minute's invocations spread evenly over the minute)
// and the loop that ties the live system's own pieces together: requests
// are counted by stats.Accounting as the queue-proxy and the activator
// count them, the activator's reports and pokes are cut as its report loop
// cuts them, each second is closed through the autoscaler's own loop
// (secondloop.Loop: a poke closes the current second at once, a scale to zero
// waits secondloop.LateBound closes), and the decisions scale a model of the
// platform: replicas that
// become ready a cold start after their creation and drain their requests
// when removed. docs/whatif.md describes the model and where it differs
// from a cluster.
//
// It is pure: no files, no clock, no logging. The caller passes the parsed
// trace and the validated revision config in and gets a Result out; one
// Run is single-threaded, and Runs of different functions are independent.
package whatif
