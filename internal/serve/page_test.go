package serve_test

import (
	"bytes"
	"context"
	"flag"
	"image/png"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

var screenshot = flag.String("screenshot", "", "write the live page's screenshot to this file (docs/serve.png)")

// browser opens a headless Chromium (Debian's chromium package) for the
// test. Without it the test is skipped, or failed under CI.
func browser(t *testing.T) context.Context {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed (apt-get install chromium; .ci/test does)")
		}
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox,
		chromedp.WindowSize(1400, 900), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	// the first run starts the browser, for the context's lifetime: it
	// takes no bound of its own
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return ctx
}

// within runs actions with a bound: the page must show a change within a
// few seconds of it happening in ZooKeeper.
func within(t *testing.T, ctx context.Context, what string, bound time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if err := chromedp.Do(cctx, steps...); err != nil {
		dump, _ := chromedp.Run(ctx, chromedp.OuterHTML("body"))
		t.Fatalf("%s: %v\npage:\n%s", what, err, dump)
	}
}

// textIs waits until the element of sel has text want (by polling the
// DOM inside the page).
func textIs(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](`(() => { const e = document.querySelector(` + jsString(sel) + `); return e !== null && e.textContent === ` + jsString(want) + `; })()`)
}

// holdsNot waits until the element of sel exists and its text holds want
// and not unwanted.
func holdsNot(sel, want, unwanted string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](`(() => { const e = document.querySelector(` + jsString(sel) + `); return e !== null && e.textContent.includes(` + jsString(want) + `) && !e.textContent.includes(` + jsString(unwanted) + `); })()`)
}

// contains waits until the element of sel exists and its text holds want.
func contains(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](`(() => { const e = document.querySelector(` + jsString(sel) + `); return e !== null && e.textContent.includes(` + jsString(want) + `); })()`)
}

func jsString(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

// The live page in a real browser: a lock taken by a process appears with
// its holder, a queue's depth follows puts and takes, and a ZooKeeper
// outage is shown as one, all without reloading the page.
func TestLivePage(t *testing.T) {
	// TTL nodes for the lease; reaped after the test is over
	srv := zktest.Start(t, zktest.WithTTLNodes(10*time.Minute))
	provision(t, srv.Addr())
	base := startServe(t, srv.Addr())
	ctx := browser(t)
	a := startActor(t, "alpha", srv.Addr())
	b := startActor(t, "beta", srv.Addr())

	within(t, ctx, "open the page", 30*time.Second,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`[data-resource="order_lock"]`),
		contains("#status", "live"),
		contains("#status", "persistent watch"),
	)
	// the page's identity: a reload would lose it
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.loaded = "once"`)); err != nil {
		t.Fatal(err)
	}

	a.do("lock 3")
	within(t, ctx, "the lock's holder appears", 5*time.Second,
		contains(`[data-resource="order_lock"] .instance .holder .who`, "e2e alpha"),
		textIs(`[data-resource="order_lock"] .instance .summary`, "held"))

	a.do("put 4")
	within(t, ctx, "the queue's depth after puts", 5*time.Second, textIs(`[data-resource="outbox"] .depth`, "4"))
	a.do("take 2")
	a.do("ack")
	within(t, ctx, "the queue's depth after takes", 5*time.Second, textIs(`[data-resource="outbox"] .depth`, "2"))

	// more to draw in the screenshot: a waiter, a leader, a partitioner member
	b.send("lock 3")
	b.do("campaign")
	b.do("join")
	a.do("dead 1")
	a.do("lease")
	within(t, ctx, "the rest drawn", 10*time.Second,
		contains(`[data-resource="order_lock"] .instance .waiter .who`, "e2e beta"),
		contains(`[data-resource="scheduler"] .leader`, "host beta"),
		// a member in words, not its payload's JSON (issue 46)
		holdsNot(`[data-resource="shards"] .owner`, "host beta · port ", "{"),
		textIs(`[data-resource="shards"] .summary`, "64 partitions, 0 unowned"),
		contains(`[data-resource="outbox"] .dead`, "1 dead letters"),
		// what died and why, not only how many
		// (the poisoner fails whichever item comes first)
		contains(`[data-resource="outbox"] .deadletter .payload`, "name "),
		textIs(`[data-resource="outbox"] .deadletter .reason`, "poison"),
		contains(`[data-resource="leases"] .holder .who`, "alpha"))
	registerPayments(t, srv.Servers())
	within(t, ctx, "a service's instance appears", 5*time.Second,
		textIs(`[data-resource="payments"] .summary`, "1 instances"),
		textIs(`[data-resource="payments"] .svcinstance .addr`, "10.0.0.7:8080"),
		textIs(`[data-resource="payments"] .svcinstance .payload`, "zone eu-1 · version 1.4"))
	// who holds the queue's items, and for how long (issue 46)
	b.do("take 1")
	within(t, ctx, "the queue's consumer and its claim", 10*time.Second,
		contains(`[data-resource="outbox"] .summary`, ", 1 claimed by 1 consumer"),
		contains(`[data-resource="outbox"] .consumer`, "holds 1 item, for "),
		contains(`[data-resource="outbox"] .consumer .who`, "session 0x"),
		contains(`[data-resource="outbox"] .claim`, " held by session 0x"),
		contains(`[data-resource="outbox"] .claim .item`, "item-"))
	if !labelled(scrape(t, base), "zkgen_partitions_owned{", `member="host beta · port `) {
		t.Errorf("no zkgen_partitions_owned series labelled with beta's payload in words")
	}
	// the lease is never renewed: 5 s later it reads lapsed, and only that
	within(t, ctx, "the lease lapses", 15*time.Second,
		holdsNot(`[data-resource="leases"] .holder .due`, "lapsed ", "expires"))
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if *screenshot != "" {
		if err := os.WriteFile(*screenshot, shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	srv.RequireLocal(t)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, "the outage shows", 15*time.Second,
		chromedp.WaitVisible(`#outage`),
		contains(`#outage`, "ZooKeeper outage since"),
		contains(`#status`, "outage"),
		// the last state read stays, marked as such
		contains(`[data-resource="order_lock"] .instance .holder .who`, "e2e alpha"))
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.loaded`))
	if err != nil || loaded != "once" {
		t.Fatalf("the page was reloaded (marker %q, %v)", loaded, err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	within(t, ctx, "back after the outage", 30*time.Second,
		chromedp.WaitNotVisible(`#outage`),
		textIs(`[data-resource="outbox"] .depth`, "2"))
}

// labelled reports whether m has a series of the family that prefix
// names with a label that starts with label.
func labelled(m metrics, prefix, label string) bool {
	for k := range m {
		if strings.HasPrefix(k, prefix) && strings.Contains(k, label) {
			return true
		}
	}
	return false
}

// registerPayments registers an instance of the example's payments
// service on a session of its own, until the test ends.
func registerPayments(t *testing.T, servers []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := runtime.Connect(ctx, servers)
	if err != nil {
		t.Fatal(err)
	}
	d := coord.NewPayments()
	ran := make(chan error, 1)
	go func() { ran <- d.Run(ctx, s) }()
	t.Cleanup(func() { cancel(); <-ran; s.Close() })
	rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
	defer rcancel()
	if _, err := d.Register(rctx, runtime.ServiceInstance[coord.PaymentsInstance]{Name: coord.PaymentsName, ID: "p1",
		Address: "10.0.0.7", Port: 8080, Payload: coord.PaymentsInstance{Zone: "eu-1", Version: "1.4"}}); err != nil {
		t.Fatal(err)
	}
}
