package whatif

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// minutesPerDay is the length of a trace: per-minute counts of one day.
const minutesPerDay = 1440

// Function is one function of the trace: one revision of the simulation.
type Function struct {
	Hash, App, Owner string
	// Invocations are the invocations of each minute (1,440 for a day).
	Invocations []uint32
	// Duration is how long each request runs on a replica: the trace's
	// Average execution time, at least 1ms.
	Duration time.Duration
	// Arrivals, when not nil, replace the spread of Invocations: the
	// second (since the trace's start, ascending) at which each request
	// arrives, from a request log such as a recorded live run's.
	// Invocations then only give the trace's length in minutes.
	Arrivals []int64
}

// requests is the number of invocations over the whole trace.
func (f *Function) requests() int64 {
	if f.Arrivals != nil {
		return int64(len(f.Arrivals))
	}
	var n int64
	for _, c := range f.Invocations {
		n += int64(c)
	}
	return n
}

// errTrace marks a trace file that does not have the expected format.
var errTrace = errors.New("invalid trace")

const (
	colFunction = "HashFunction"
	colApp      = "HashApp"
	colOwner    = "HashOwner"
	colAverage  = "Average"
)

// ParseInvocations reads invocations.csv: HashFunction, HashApp, HashOwner,
// then one count per minute (minute_1 ... minute_N).
func ParseInvocations(r io.Reader) ([]Function, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading invocations header: %w: %w", errTrace, err)
	}
	if len(head) < 4 || head[0] != colFunction || head[1] != colApp || head[2] != colOwner || !strings.HasPrefix(head[3], "minute_") {
		return nil, fmt.Errorf("invocations header %q: %w: want HashFunction,HashApp,HashOwner,minute_1,...", strings.Join(head[:min(len(head), 4)], ","), errTrace)
	}
	head = slices.Clone(head) // ReuseRecord: the next Read overwrites it
	minutes := len(head) - 3
	var out []Function
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading invocations: %w: %w", errTrace, err)
		}
		f := Function{Hash: rec[0], App: rec[1], Owner: rec[2], Invocations: make([]uint32, minutes)}
		for m := range minutes {
			n, err := strconv.ParseUint(strings.TrimSpace(rec[3+m]), 10, 32)
			if err != nil {
				return nil, fmt.Errorf("invocations line %d, %s: %q: %w: want a count of 0 or more", line, head[3+m], rec[3+m], errTrace)
			}
			f.Invocations[m] = uint32(n)
		}
		out = append(out, f)
	}
}

// ParseDurations reads durations.csv and returns each function's Average
// execution time (milliseconds in the file), at least 1ms.
func ParseDurations(r io.Reader) (map[string]time.Duration, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("reading durations header: %w: %w", errTrace, err)
	}
	avg := -1
	for i, h := range head {
		if h == colAverage {
			avg = i
		}
	}
	if len(head) == 0 || head[0] != colFunction || avg < 0 {
		return nil, fmt.Errorf("durations header: %w: want HashFunction first and an Average column", errTrace)
	}
	out := map[string]time.Duration{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading durations: %w: %w", errTrace, err)
		}
		ms, err := strconv.ParseFloat(strings.TrimSpace(rec[avg]), 64)
		if err != nil || ms < 0 || ms > 1e9 {
			return nil, fmt.Errorf("durations line %d, Average %q: %w: want milliseconds in [0, 1e9]", line, rec[avg], errTrace)
		}
		out[rec[0]] = max(time.Duration(ms*float64(time.Millisecond)).Round(time.Millisecond), time.Millisecond)
	}
}

// ParseMemory checks memory.csv (per app: HashApp, HashOwner, SampleCount,
// AverageAllocatedMb, ...). The simulation does not use memory; the file is
// read so that a wrong file is reported rather than ignored.
func ParseMemory(r io.Reader) (apps int, err error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return 0, fmt.Errorf("reading memory header: %w: %w", errTrace, err)
	}
	if len(head) < 4 || head[0] != colApp || head[3] != "AverageAllocatedMb" {
		return 0, fmt.Errorf("memory header: %w: want HashApp,HashOwner,SampleCount,AverageAllocatedMb,...", errTrace)
	}
	for {
		_, err := cr.Read()
		if err == io.EOF {
			return apps, nil
		}
		if err != nil {
			return 0, fmt.Errorf("reading memory: %w: %w", errTrace, err)
		}
		apps++
	}
}

// JoinDurations sets each function's Duration; a function without a
// duration row is an error naming it (all of them at once).
func JoinDurations(fns []Function, durations map[string]time.Duration) error {
	var missing []string
	for i := range fns {
		d, ok := durations[fns[i].Hash]
		if !ok {
			missing = append(missing, fns[i].Hash)
			continue
		}
		fns[i].Duration = d
	}
	if len(missing) > 0 {
		return fmt.Errorf("%d function(s) have no row in the durations file (first: %s): %w; give the durations file of the same trace",
			len(missing), missing[0], errTrace)
	}
	return nil
}
