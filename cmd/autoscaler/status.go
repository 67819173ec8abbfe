package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"ebb.dev/ebb/pkg/autoscaler"
	"ebb.dev/ebb/pkg/config"
	"ebb.dev/ebb/pkg/decider"
	"ebb.dev/ebb/pkg/fleet"
)

// defaultServer is where `autoscaler run` serves its API by default.
var defaultServer = "http://127.0.0.1:" + strconv.Itoa(config.AutoscalerAdminPort)

const statusUsage = `usage: autoscaler status [--server URL]
       autoscaler explain [--server URL] [--limit N] NAMESPACE/NAME

status prints every revision's current state; explain prints one revision's
state and its last decisions with their reasons. Both ask a running
autoscaler (autoscaler run) over HTTP.

Flags:
`

func runStatus(args []string, s streams) int {
	fs, server, _ := clientFlags("status", s)
	if err := fs.Parse(flagsFirst(fs, args)); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return 2
	}
	var list []autoscaler.Status
	h, err := getJSONHeader(*server+"/revisions", &list)
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler status: %v\n", err)
		return 1
	}
	if missing := h.Get(fleet.PartialHeader); missing != "" {
		fmt.Fprintf(s.err, "autoscaler status: the revisions of autoscaler replicas that did not answer are missing: %s\n", missing)
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tSTATE\tREADY\tDESIRED\tRECOMMENDED\tPANIC\tEBC\tACTIVATOR\tSTABLE\tTARGET\tLAST DECISION\tCONDITIONS")
	for _, st := range list {
		state := st.State
		if st.Resting { // its last decision stands: LAST DECISION is when it went to rest
			state += " (resting)"
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%d\t%d\t%d\t%v\t%d\t%s\t%s\t%.2f %s\t%s\t%s\n",
			st.Namespace, st.Name, state, st.Ready, st.Desired, st.Recommended, st.Panic, st.EBC,
			inPath(st.ActivatorInPath), fixed(st.Stable, 2), st.Target, st.Metric, ago(st.Time), conditionsText(st.Conditions))
	}
	tw.Flush()
	return 0
}

func runExplain(args []string, s streams) int {
	fs, server, limit := clientFlags("explain", s)
	if err := fs.Parse(flagsFirst(fs, args)); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	key, err := autoscaler.ParseRevisionKey(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(s.err, "autoscaler explain: %v\n", err)
		return 2
	}
	var resp autoscaler.DecisionsResponse
	u := *server + "/revisions/" + url.PathEscape(key.Namespace) + "/" + url.PathEscape(key.Name) + "/decisions?limit=" + strconv.Itoa(*limit)
	if err := getJSON(u, &resp); err != nil {
		fmt.Fprintf(s.err, "autoscaler explain: %v\n", err)
		return 1
	}
	printExplain(s.out, resp)
	return 0
}

func printExplain(w io.Writer, resp autoscaler.DecisionsResponse) {
	st := resp.Status
	unit := " per pod"
	if len(st.Conditions) > 0 { // the HPA class: its first metric's target, a utilization or a per-pod value
		unit = ""
	}
	fmt.Fprintf(w, "%s/%s (%s, %s, target %.2f%s)\n", st.Namespace, st.Name, st.Class, st.Metric, st.Target, unit)
	fmt.Fprintf(w, "  now: %s, %d ready, desired %d, recommended %d, panic %v, excess burst capacity %d, activator %s\n\n",
		st.State, st.Ready, st.Desired, st.Recommended, st.Panic, st.EBC, inPath(st.ActivatorInPath))
	for _, c := range st.Conditions {
		fmt.Fprintf(w, "  %-15s %-5s %-24s %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	if len(st.Conditions) > 0 {
		fmt.Fprintln(w)
	}
	for _, d := range resp.Decisions {
		fmt.Fprintf(w, "%s  desired %d (recommended %d, ready %d, stable %s, panic avg %s)%s\n",
			d.Time.Format("15:04:05"), d.Desired, d.Recommended, d.Ready, fixed(d.Stable, 3), fixed(d.PanicAverage, 3), panicMark(d.Panic))
		for _, r := range d.Reasons {
			fmt.Fprintf(w, "    %-24s %s\n", r.Code, r.Message)
		}
	}
}

func clientFlags(name string, s streams) (*flag.FlagSet, *string, *int) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(s.err)
	server := fs.String("server", defaultServer, "the autoscaler's API address")
	limit := fs.Int("limit", 10, "how many decisions to show (explain)")
	fs.Usage = func() { fmt.Fprint(s.err, statusUsage); fs.PrintDefaults() }
	return fs, server, limit
}

func getJSON(u string, v any) error {
	_, err := getJSONHeader(u, v)
	return err
}

// getJSONHeader is getJSON that also returns the answer's header.
func getJSONHeader(u string, v any) (http.Header, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return nil, fmt.Errorf("asking the autoscaler: %w (is `autoscaler run` running? set --server)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return nil, fmt.Errorf("reading the autoscaler's answer: %w", err)
	}
	return resp.Header, nil
}

// fixed formats f with prec decimals; a value that rounds to zero prints
// without a sign ("0.000", not "-0.000").
func fixed(f float64, prec int) string {
	s := strconv.FormatFloat(f, 'f', prec, 64)
	if strings.Trim(s, "-0.") == "" {
		return s[strings.IndexByte(s, '0'):]
	}
	return s
}

func inPath(b bool) string {
	if b {
		return "in path"
	}
	return "out of path"
}

func panicMark(b bool) string {
	if b {
		return "  PANIC"
	}
	return ""
}

func ago(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Truncate(time.Second).String() + " ago"
}

// conditionsText is the HPA conditions that say something in a table
// cell: those off their usual value (AbleToScale ReadyForNewScale,
// ScalingActive ValidMetricFound, ScalingLimited DesiredWithinRange), or
// "ok" when none is; "-" for other classes.
func conditionsText(cs []decider.Condition) string {
	if len(cs) == 0 {
		return "-"
	}
	var parts []string
	for _, c := range cs {
		switch c.Reason {
		case "ReadyForNewScale", "ValidMetricFound", "DesiredWithinRange":
		default:
			parts = append(parts, c.Type+"="+c.Reason)
		}
	}
	if len(parts) == 0 {
		return "ok"
	}
	return strings.Join(parts, ",")
}
