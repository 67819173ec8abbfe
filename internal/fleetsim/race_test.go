//go:build race

package fleetsim

// raceDetector: the race detector slows the model tenfold and finds
// nothing in it (one goroutine); TestRandomSchedules runs fewer seeds.
const raceDetector = true
