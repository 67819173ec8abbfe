package main

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard test drives the real `autoscaler run` with hey, and its
// dashboard page in headless Chromium (Debian's chromium package, found on
// PATH; without it the test is skipped).

var updateScreenshot = flag.Bool("update-screenshot", false, "write the dashboard test's screenshot to docs/images/dashboard.png")

// chromiumPath is Chromium's path; the test is skipped without it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("skipping: chromium not on PATH (apt-get install chromium; .ci/run installs it)")
	}
	return chromium
}

// browser starts headless Chromium for the test, closed at its end; its
// 90 s deadline starts now.
func browser(t *testing.T, chromium string) context.Context {
	t.Helper()
	profile := t.TempDir() // before the browser's cleanup: removed after the browser exits
	ctx, cancelTimeout := context.WithTimeout(context.Background(), 90*time.Second)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true), chromedp.Flag("hide-scrollbars", true), chromedp.Flag("mute-audio", true),
		chromedp.Flag("force-color-profile", "srgb"), chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 900))
	bctx, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelBrowser(); cancelAlloc(); cancelTimeout() })
	return bctx
}

// pageErrors collects the page's uncaught exceptions and console errors.
type pageErrors struct {
	mu   sync.Mutex
	msgs []string
}

func watchConsole(ctx context.Context) *pageErrors {
	pe := &pageErrors{}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" {
				pe.mu.Lock()
				pe.msgs = append(pe.msgs, m.String())
				pe.mu.Unlock()
			}
		}
	}()
	return pe
}

func (pe *pageErrors) list() []string {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	return append([]string(nil), pe.msgs...)
}

// pageState is what the test reads from the page: data- attributes the
// script sets on the chart, and the decision list.
const pageState = `JSON.stringify({
  hash: location.hash,
  conn: document.getElementById('conn').dataset.state,
  revisions: [...document.querySelectorAll('#revisions li')].map(li => li.dataset.key),
  points: Number(document.getElementById('chart').dataset.points),
  maxDesired: Number(document.getElementById('chart').dataset.maxDesired),
  lastDesired: Number(document.getElementById('chart').dataset.lastDesired),
  panicBands: Number(document.getElementById('chart').dataset.panicBands || 0),
  activatorBands: Number(document.getElementById('chart').dataset.activatorBands || 0),
  decisions: [...document.querySelectorAll('#decisions li.decision')].map(li => li.dataset.desired + ':' + li.dataset.codes),
})`

// waitPage polls expr (a JavaScript boolean) until it holds, and fails the
// test with the page's state when limit passes first.
func waitPage(t *testing.T, ctx context.Context, limit time.Duration, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			st, _ := chromedp.Run(ctx, chromedp.Evaluate[string](pageState))
			t.Fatalf("waited %v for %s; last error %v; page: %s", limit, what, err, st)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// screenshot saves the viewport to the test's artifact directory, and to
// docs/images/dashboard.png with -update-screenshot.
func screenshot(t *testing.T, ctx context.Context) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	shot := filepath.Join(t.ArtifactDir(), "dashboard.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (kept with go test -artifacts)", shot)
	if *updateScreenshot {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "images", "dashboard.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDashboardInChromium: the dashboard at / of the admin port selects the
// first revision, and a scale-up under hey shows on the chart (a desired
// step above 1, a panic period) and in the decision list (desired > 1 with
// a scaling reason). The screenshot is taken under load. Then a click
// selects the other revision, in the URL hash too, and Back returns; a
// revision of the HPA class shows Kubernetes' HPA conditions under its
// decisions.
func TestDashboardInChromium(t *testing.T) {
	// The binaries first: on a fresh machine their build takes minutes,
	// which must not count against the browser's deadline.
	chromium := chromiumPath(t) // skips without Chromium
	bin := binaries(t)
	ctx := browser(t, chromium) // starts Chromium at the first action
	// A second revision, idle at zero, to select by a click.
	world := strings.Replace(e2eRevision(bin), "{name: hello, namespace: default,", "{name: world, namespace: demo,", 1)
	// A third, of the HPA class on cpu (min 1), whose decisions carry
	// Kubernetes' HPA conditions.
	cpu := strings.Replace(strings.Replace(e2eRevision(bin), "{name: hello, namespace: default,", "{name: cpu, namespace: demo,", 1),
		`        autoscaling.knative.dev/target: "5"`, `        autoscaling.knative.dev/class: hpa.autoscaling.knative.dev
        autoscaling.knative.dev/metric: cpu
        autoscaling.knative.dev/target: "50"
        autoscaling.knative.dev/min-scale: "1"`, 1) + `          resources: {requests: {cpu: 100m}}
`
	e := startEbb(t, map[string]string{"config.yaml": e2eConfig, "hello.yaml": e2eRevision(bin), "world.yaml": world, "cpu.yaml": cpu})
	errs := watchConsole(ctx)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate("http://"+e.api+"/")); err != nil {
		t.Fatalf("opening the dashboard: %v", err)
	}
	waitPage(t, ctx, 15*time.Second, "the first revision to be selected and live",
		`location.hash === '#default/hello' && document.getElementById('conn').dataset.state === 'live' &&
		 document.querySelector('#revisions [aria-current="true"]') !== null`)

	// 20 clients on a 50 ms app at a target of 5: about 4 replicas.
	const load = 12 * time.Second
	started := time.Now()
	done := startHey(t, e, "-z", load.String(), "-c", "20")
	waitPage(t, ctx, 30*time.Second, "a desired-replicas step above 1 on the chart",
		`Number(document.getElementById('chart').dataset.maxDesired) > 1 && document.querySelector('#chart path.s-desired') !== null`)
	waitPage(t, ctx, 15*time.Second, "a decision with desired > 1 and a scaling reason in the list",
		`[...document.querySelectorAll('#decisions li.decision')].some(li =>
		   Number(li.dataset.desired) > 1 && /\b(PanicEntered|PanicTarget|StableTarget)\b/.test(li.dataset.codes))`)
	waitPage(t, ctx, 10*time.Second, "a panic period shaded on the chart",
		`Number(document.getElementById('chart').dataset.panicBands) > 0`)
	// Near the end of the load the chart shows the whole way up.
	if rest := time.Until(started.Add(load - 2*time.Second)); rest > 0 {
		time.Sleep(rest)
	}
	screenshot(t, ctx)
	res := waitHey(t, done)
	st, _ := chromedp.Run(ctx, chromedp.Evaluate[string](pageState))
	t.Logf("hey: %d responses %v; page: %s", res.Total, res.Codes, st)

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#revisions li[data-key="demo/world"] button`))); err != nil {
		t.Fatalf("clicking demo/world: %v", err)
	}
	waitPage(t, ctx, 10*time.Second, "demo/world to be selected, in the URL hash too",
		`location.hash === '#demo/world' && document.getElementById('rev-title').textContent === 'demo/world' &&
		 document.querySelector('#revisions li[data-key="demo/world"] button').getAttribute('aria-current') === 'true'`)
	// history.back() rather than NavigateBack: a hash change loads no page.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(history.back(), true)`)); err != nil {
		t.Fatalf("going back: %v", err)
	}
	waitPage(t, ctx, 10*time.Second, "Back to select default/hello again, with its chart",
		`location.hash === '#default/hello' && document.getElementById('rev-title').textContent === 'default/hello' &&
		 Number(document.getElementById('chart').dataset.maxDesired) > 1`)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#revisions li[data-key="demo/cpu"] button`))); err != nil {
		t.Fatalf("clicking demo/cpu: %v", err)
	}
	waitPage(t, ctx, 20*time.Second, "demo/cpu's decisions showing Kubernetes' HPA conditions",
		`location.hash === '#demo/cpu' && [...document.querySelectorAll('#decisions li.decision')].some(li =>
		   /\bAbleToScale=True:\w+/.test(li.dataset.conditions) && /\bScalingActive=(True|False):\w+/.test(li.dataset.conditions) &&
		   /\bScalingLimited=(True|False):\w+/.test(li.dataset.conditions) && li.querySelectorAll('.conditions span').length === 3)`)
	if msgs := errs.list(); len(msgs) > 0 {
		t.Errorf("the page logged errors:\n%s", strings.Join(msgs, "\n"))
	}
}
