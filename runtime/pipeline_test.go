package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// pipelined is one recipe's acquire-release cycle, for the round-trip
// counts of the pipelined create-and-list (pipeline.go).
type pipelined struct {
	name    string
	dirs    []string // persistent directories made first, as suffixes of the recipe's path
	creates int64    // pipelined creates per cycle
	trips   int64    // round trips per cycle when every listing is used; 0: not exact (see below)
	cycle   func(ctx context.Context, s *runtime.Session, dir string) error
}

func lockCycle(l runtime.LockHandle) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if err := l.Lock(ctx); err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
}

// lockDirs: the recipe's directory itself.
var lockDirs = []string{""}

var pipelinedRecipes = []pipelined{
	// create + children together, then delete.
	{"lock", lockDirs, 1, 2, func(ctx context.Context, s *runtime.Session, dir string) error {
		return lockCycle(runtime.NewLock(s, runtime.At(dir)))(ctx)
	}},
	{"lock-kazoo", lockDirs, 1, 2, func(ctx context.Context, s *runtime.Session, dir string) error {
		return lockCycle(runtime.NewLock(s, runtime.At(dir), runtime.WithLayout(runtime.LayoutKazoo)))(ctx)
	}},
	{"rwlock-read", lockDirs, 1, 2, func(ctx context.Context, s *runtime.Session, dir string) error {
		return lockCycle(runtime.NewRWLock(s, runtime.At(dir)).Read())(ctx)
	}},
	{"rwlock-write-kazoo", lockDirs, 1, 2, func(ctx context.Context, s *runtime.Session, dir string) error {
		return lockCycle(runtime.NewRWLock(s, runtime.At(dir), runtime.WithLayout(runtime.LayoutKazoo)).Write())(ctx)
	}},
	// The internal lock (create + children), the lease (create + watched
	// children), the internal lock's delete, the lease's delete.
	{"semaphore", []string{"", "/locks", "/leases"}, 2, 4, func(ctx context.Context, s *runtime.Session, dir string) error {
		le, err := runtime.NewSemaphore(s, runtime.At(dir), 2).Acquire(ctx)
		if err != nil {
			return err
		}
		return le.Release(ctx)
	}},
	// kazoo's semaphore lists before it creates its lease: only its
	// internal lock is pipelined. Internal lock (1), lease count and create
	// (2), internal lock's delete (1), lease's delete (1).
	{"semaphore-kazoo", []string{"", "-__lock__"}, 1, 5, func(ctx context.Context, s *runtime.Session, dir string) error {
		le, err := runtime.NewSemaphore(s, runtime.At(dir), 2, runtime.WithLayout(runtime.LayoutKazoo)).Acquire(ctx)
		if err != nil {
			return err
		}
		return le.Release(ctx)
	}},
	// A leadership watches its node from the start, in the background:
	// that read may or may not share a round trip with the
	// acknowledgement's, so the count is not exact.
	{"election", lockDirs, 1, 0, func(ctx context.Context, s *runtime.Session, dir string) error {
		l, err := runtime.NewElection(s, runtime.At(dir), runtime.StringCodec()).Campaign(ctx, "me")
		if err != nil {
			return err
		}
		return l.Resign(ctx)
	}},
}

// runCycles runs n cycles of r through p and returns the wire counts and
// the session's pipelined listings used and dropped.
func runCycles(t *testing.T, ctx context.Context, p *zktest.Proxy, s *runtime.Session, r pipelined, dir string, n int) (zktest.Counts, int64, int64) {
	t.Helper()
	h0, f0 := runtime.PipeStats(s)
	p.ResetCounts()
	for i := 0; i < n; i++ {
		if err := r.cycle(ctx, s, dir); err != nil {
			t.Fatalf("%s: cycle %d: %v", r.name, i, err)
		}
	}
	c := p.Counts()
	h, f := runtime.PipeStats(s)
	return c, h - h0, f - f0
}

// An uncontended acquisition sends its children read right behind its
// create, without waiting for the create's reply: the pair is one round
// trip (an uncontended lock cycle: 2 round trips, 3 requests). The proxy
// counts a round trip for each request sent while none of the session's
// is awaiting a reply; its added latency (each way) makes the window in
// which the listing must be sent far longer than a goroutine start. When
// the listing is answered before the create is sent (ListBeforeCreate) it
// cannot hold the new node: it is dropped, the recipe lists again, and
// the acquisition is still correct, at two round trips and one request
// more than the pipelined one.
func TestPipelinedCreateRoundTrips(t *testing.T) {
	srv := server(t)
	for _, r := range pipelinedRecipes {
		t.Run(r.name, func(t *testing.T) {
			ctx := testCtx(t, time.Minute)
			p := zktest.NewProxy(t, srv.Addr())
			s := connect(t, []string{p.Addr()})
			dir := testRoot(t)
			// Persistent directories: the server removes an empty
			// container one (a recipe's own) within a minute, and the
			// next create would make it again, in requests of its own.
			makeDirs(t, s, "/zkgen-test")
			for _, d := range r.dirs {
				makeDirs(t, s, dir+d)
			}
			if err := r.cycle(ctx, s, dir); err != nil {
				t.Fatal(err)
			}
			p.Delay(20 * time.Millisecond)
			const n = 3

			fast, hits, falls := runCycles(t, ctx, p, s, r, dir, n)
			if hits != n*r.creates || falls != 0 {
				t.Fatalf("pipelined: %d listings used, %d dropped; want %d, 0", hits, falls, n*r.creates)
			}
			if r.trips > 0 && fast.RoundTrips != n*r.trips {
				t.Fatalf("pipelined: %d round trips for %d cycles, want %d per cycle (requests %v)", fast.RoundTrips, n, r.trips, fast.Requests)
			}

			runtime.ListBeforeCreate(s, true)
			slow, hits, falls := runCycles(t, ctx, p, s, r, dir, n)
			runtime.ListBeforeCreate(s, false)
			if hits != 0 || falls != n*r.creates {
				t.Fatalf("listing first: %d listings used, %d dropped; want 0, %d", hits, falls, n*r.creates)
			}
			if got, want := slow.Total(), fast.Total()+n*r.creates; got != want {
				t.Fatalf("listing first: %d requests, want %d (pipelined %d, one more per create)", got, want, fast.Total())
			}
			if r.trips > 0 && slow.RoundTrips != n*(r.trips+2*r.creates) {
				t.Fatalf("listing first: %d round trips for %d cycles, want %d per cycle", slow.RoundTrips, n, r.trips+2*r.creates)
			}
			if r.trips == 0 && slow.RoundTrips < fast.RoundTrips+n*r.creates {
				t.Fatalf("listing first: %d round trips, pipelined %d: want at least %d more", slow.RoundTrips, fast.RoundTrips, n*r.creates)
			}
			t.Logf("%d cycles: pipelined %d requests in %d round trips; listing first %d in %d",
				n, fast.Total(), fast.RoundTrips, slow.Total(), slow.RoundTrips)
		})
	}
}

// With the listing answered before the create (so it never holds the new
// node), the lock still excludes: a contender that arrives while another
// holds waits for the release, the holder's listing taken before its own
// node existed is never taken for "first", and the tokens grow.
func TestLockFallbackListingWithoutNode(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	as, bs := connect(t, srv.Servers()), connect(t, srv.Servers())
	runtime.ListBeforeCreate(as, true)
	runtime.ListBeforeCreate(bs, true)
	a, b := runtime.NewLock(as, runtime.At(dir)), runtime.NewLock(bs, runtime.At(dir))

	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.TryLock(ctx); err != nil || ok {
		t.Fatalf("TryLock while a holds: %v, %v; want false", ok, err)
	}
	tokA := a.Token()
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	// b's node is queued behind a's before a lets go.
	waitChildren(t, ctx, as, dir, 2)
	select {
	case err := <-got:
		t.Fatalf("b took the lock while a held it (err %v)", err)
	default:
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if b.Token() <= tokA {
		t.Fatalf("token %d after %d: must grow", b.Token(), tokA)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if hits, falls := runtime.PipeStats(as); hits != 0 || falls != 1 {
		t.Fatalf("a: %d listings used, %d dropped; want 0, 1", hits, falls)
	}
	if hits, falls := runtime.PipeStats(bs); hits != 0 || falls != 2 {
		t.Fatalf("b: %d listings used, %d dropped; want 0, 2", hits, falls)
	}
	if kids := childrenOf(t, as, dir); len(kids) != 0 {
		t.Fatalf("left behind: %v", kids)
	}
}
