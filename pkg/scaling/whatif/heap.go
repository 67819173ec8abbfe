package whatif

// completionHeap is a binary min-heap of completions by time. Ties come
// out in an order fixed by the pushes, so a run is deterministic.
type completionHeap struct{ h []completion }

func (c *completionHeap) Len() int        { return len(c.h) }
func (c *completionHeap) min() completion { return c.h[0] }

func (c *completionHeap) push(x completion) {
	c.h = append(c.h, x)
	i := len(c.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if c.h[p].at <= c.h[i].at {
			break
		}
		c.h[p], c.h[i] = c.h[i], c.h[p]
		i = p
	}
}

func (c *completionHeap) pop() completion {
	top := c.h[0]
	n := len(c.h) - 1
	c.h[0] = c.h[n]
	c.h[n] = completion{}
	c.h = c.h[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && c.h[l].at < c.h[m].at {
			m = l
		}
		if r < n && c.h[r].at < c.h[m].at {
			m = r
		}
		if m == i {
			return top
		}
		c.h[i], c.h[m] = c.h[m], c.h[i]
		i = m
	}
}
