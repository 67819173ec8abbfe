// Package plot draws the chart of a replayed scenario, as `autoscaler
// simulate --plot` and `make demo-plot` write it: the samples, the
// observed averages and the target on top; desired, recommended and ready
// replicas below; panic and activator-in-path periods shaded on both.
// The x axis is the scenario's seconds.
//
// It renders SVG with gonum.org/v1/plot, and an HTML page that embeds the
// SVG with the revision's settings and the table of decisions that changed
// something. It is pure: it reads no file and no clock; the caller passes
// the samples and the replay's lines in and a writer for the output.
package plot
