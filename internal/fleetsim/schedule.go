package fleetsim

import (
	"math/rand/v2"
	"slices"
	"time"
)

// Random builds a run from seed: a fleet of one to four replicas and
// two activators, then a random fault every few seconds for length
// (pauses up to three lease durations, SIGKILLs the Deployment replaces,
// restarts in place, API cut-offs, stalled watches, --buckets changes up
// and down, rolling or all at once, with old pods killed or stopped,
// scaling out and in), then a quiet lease duration. Run it with
// (*Sim).Run(end).
func Random(c Config, seed uint64, length time.Duration) (s *Sim, end time.Duration) {
	s = New(c, seed)
	rng := rand.New(rand.NewPCG(seed^0x5eed, seed))
	counts := []int{3, 5, 10, 20}
	d := &deployment{s: s, count: counts[rng.IntN(len(counts))], want: 1 + rng.IntN(4)}
	for range d.want {
		s.Start(s.NewPod(), d.count)
	}
	s.AddActivator()
	s.AddActivator()
	dur := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	t := 20 * time.Second
	for t < length {
		t += dur(2*time.Second, 40*time.Second)
		pick := func() string {
			live := s.Live()
			if len(live) == 0 {
				return ""
			}
			return live[rng.IntN(len(live))]
		}
		switch k := rng.IntN(10); k {
		case 0:
			s.At(t, func() { s.Pause(pick(), dur(c.Tick, 3*c.LeaseDuration)) })
		case 1:
			s.At(t, func() {
				p := pick()
				s.Kill(p)
				d.replace()
			})
		case 2:
			s.At(t, func() {
				p := pick()
				if p == "" {
					return
				}
				n := s.CountOf(p)
				s.Kill(p)
				s.At(s.Now()+c.PodStart, func() { s.Start(p, n) })
			})
		case 3:
			s.At(t, func() { s.CutOff(pick(), dur(c.Tick, c.LeaseDuration)) })
		case 4:
			s.At(t, func() { s.Stall(pick(), dur(c.Tick, 2*c.LeaseDuration)) })
		case 5:
			s.At(t, func() { s.StallActivator(rng.IntN(2), dur(c.Tick, c.LeaseDuration)) })
		case 6, 7:
			n := counts[rng.IntN(len(counts))]
			rolling, kill := rng.IntN(3) > 0, rng.IntN(3) == 0
			s.At(t, func() { d.change(n, rolling, kill) })
		case 8:
			s.At(t, func() { d.want++; s.At(s.Now()+c.PodStart, func() { s.Start(s.NewPod(), d.count) }) })
		case 9:
			s.At(t, func() {
				if d.want > 1 {
					d.want--
					s.Stop(pick())
				}
			})
		}
	}
	return s, t + 2*c.LeaseDuration
}

// deployment is the Deployment controller: it replaces killed pods with
// new ones of the current template.
type deployment struct {
	s     *Sim
	count int
	want  int
}

func (d *deployment) replace() {
	s := d.s
	if len(s.Live()) < d.want {
		s.At(s.Now()+s.C.PodStart, func() {
			if len(s.Live()) < d.want {
				s.Start(s.NewPod(), d.count)
			}
		})
	}
}

// change rolls the pods to count n: one new pod at a time (surge 1),
// each old one stopped (or killed) once its successor started; or all
// old pods stopped at once, the new ones started a pod start later.
func (d *deployment) change(n int, rolling, kill bool) {
	s := d.s
	d.count = n
	var old []string
	for _, p := range s.Live() {
		if s.CountOf(p) != n {
			old = append(old, p)
		}
	}
	end := func(p string) {
		if kill {
			s.Kill(p)
		} else {
			s.Stop(p)
		}
	}
	if !rolling {
		for _, p := range old {
			end(p)
		}
		for range len(old) {
			s.At(s.Now()+s.C.PodStart, func() { s.Start(s.NewPod(), n) })
		}
		return
	}
	t := s.Now()
	for _, p := range slices.Clone(old) {
		t += s.C.PodStart
		s.At(t, func() {
			if d.count == n {
				s.Start(s.NewPod(), n)
			}
		})
		t += s.C.RetryPeriod
		s.At(t, func() {
			if d.count == n {
				end(p)
			}
		})
	}
}
