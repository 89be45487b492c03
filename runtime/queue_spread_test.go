//go:build linux

package runtime_test

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Four consumers on separate sessions drain 256 items (too long to ride in
// their names, so each take reads its item): every item is taken once, each
// consumer's items come in the order they were put, and the consumers do
// not race for the same items. Consumers that all went for the lowest item
// spent about 3.4 reads and 1.5 multis an item; spread over chunks, a take
// is one read and one multi, plus a claim and a listing of the claims per
// chunk, and the race each consumer loses before it spreads out (the bound
// allows half a request an item for those).
func TestQueueConsumersSpread(t *testing.T) {
	const consumers, items = 4, 256
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	item := func(i int) string { return fmt.Sprintf("%04d %s", i, strings.Repeat("x", 40)) }
	all := make([]string, items)
	for i := range all {
		all[i] = item(i)
	}
	if _, err := runtime.NewQueue(admin, runtime.At(dir), runtime.StringCodec()).PutAll(ctx, all); err != nil {
		t.Fatal(err)
	}
	px := zktest.NewProxy(t, srv.Addr())
	var qs []*runtime.Queue[string]
	for range consumers {
		qs = append(qs, runtime.NewQueue(connect(t, viaProxy(px)), runtime.At(dir), runtime.StringCodec()))
	}
	px.ResetCounts()
	// Every consumer takes until all items are taken: one that stopped
	// while it held a chunk would give its claim up with items left, and
	// those may then reach another consumer after later ones, as the docs
	// allow (the claimer gave up).
	var mu sync.Mutex
	got := make([][]string, consumers)
	taken := 0
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for c, q := range qs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				v, err := q.Take(cctx)
				if err != nil {
					if cctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				got[c] = append(got[c], v)
				mu.Lock()
				if taken++; taken == items {
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for c, vs := range got {
		if !slices.IsSorted(vs) {
			t.Errorf("consumer %d took its items out of order: %q", c, vs)
		}
		for _, v := range vs {
			if seen[v] {
				t.Errorf("%q taken twice", v)
			}
			seen[v] = true
		}
	}
	if len(seen) != items {
		t.Errorf("%d distinct items taken, want %d", len(seen), items)
	}
	cs := px.Counts()
	t.Logf("per consumer %d %d %d %d items; requests %v (%.2f an item)", len(got[0]), len(got[1]), len(got[2]), len(got[3]),
		cs.Requests, float64(cs.Total())/items)
	if limit := int64(items * 5 / 2); cs.Total() > limit {
		t.Errorf("%d requests for %d takes, want at most %d: consumers race for items", cs.Total(), items, limit)
	}
}

// A consumer that spreads out (as after a race lost to another) and then
// stops taking gives its chunk claim up: a second after its last Take, the
// claim is deleted, and nothing of the queue is claimed.
func TestQueueIdleConsumerReleasesItsChunk(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	spreadClaimOne(t, ctx, admin, connect(t, srv.Servers()), dir)
	waitChildren(t, ctx, admin, dir+"/claims", 0)
	q := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[int]())
	if n, err := q.Len(ctx); err != nil || n != 39 {
		t.Fatalf("Len = %d, %v; want 39", n, err)
	}
}

// spreadClaimOne puts 40 items into the queue at dir (with admin) and takes
// the first with cs, a consumer that spreads out: the Take leaves one chunk
// claim, which it checks.
func spreadClaimOne(t *testing.T, ctx context.Context, admin, cs *runtime.Session, dir string) {
	t.Helper()
	q := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[int]())
	if _, err := q.PutAll(ctx, seq(0, 40)); err != nil {
		t.Fatal(err)
	}
	cq := runtime.NewQueue(cs, runtime.At(dir), runtime.JSONCodec[int]())
	runtime.Contend(cq)
	if v, err := cq.Take(ctx); err != nil || v != 0 {
		t.Fatalf("Take = %d, %v; want 0", v, err)
	}
	if claims := childrenOf(t, admin, dir+"/claims"); len(claims) != 1 {
		t.Fatalf("claims after a Take of a listed chunk: %v, want one", claims)
	}
}

// A consumer that spreads out and then stops taking gives its chunk claim
// up also when ZooKeeper cannot be reached for longer than its retry policy
// lasts when the claim's second is up: it keeps trying while its session
// lives, and the claim is deleted once the connection is back. (Seen in
// TestQueueEnsembleFailover: a release during a no-quorum outage of about
// 16 s gave up after the policy's ten attempts, and the claim stayed for as
// long as the session lived.) The outage here is 6 s, with a policy of two
// attempts (about 2 s without a server); the session outlives it.
func TestQueueChunkReleaseOutlivesAnOutage(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	px := zktest.NewProxy(t, srv.Addr())
	cs := connect(t, viaProxy(px), runtime.WithSessionTimeout(30*time.Second),
		runtime.WithRetry(runtime.RetryPolicy{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond, Attempts: 2}))
	spreadClaimOne(t, ctx, admin, cs, dir)
	px.Reject(true)
	px.CutAll()
	select {
	case <-time.After(6 * time.Second): // the outage's length, not a synchronisation
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	px.Reject(false)
	waitChildren(t, ctx, admin, dir+"/claims", 0)
	if err := cs.Err(); err != nil {
		t.Fatalf("the consumer's session did not outlive the outage: %v", err)
	}
}

// A consumer process that spreads out (as after a race lost to another),
// frozen (SIGSTOP) or killed (SIGKILL) after its Takes with its chunk
// claimed, loses nothing: the items it took are the only ones missing. A
// consumer that lost no race ignores claims and drains every other item at
// once; one that spreads out skips the claimed chunk, waits for its claim
// to go, and after chunkWait (the stopped consumer's session, 30 s, has not
// ended yet) takes it too: the claimed chunk is below everything else, yet
// comes last only because its claimer stopped. The drain then checks the
// stopped consumer's claim is still there: the drain did not wait for the
// session to end.
func TestQueueStoppedConsumerLosesNothing(t *testing.T) {
	const items = runtime.SpreadChunk + 36 // a chunk the stopped consumer claims, and more
	srv := server(t)
	for _, c := range []struct {
		name    string
		sig     syscall.Signal
		takes   int
		contend bool
	}{
		{"frozen-after-1", syscall.SIGSTOP, 1, false},
		{"killed-after-5", syscall.SIGKILL, 5, false},
		{"killed-after-5-drained-spread", syscall.SIGKILL, 5, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := testCtx(t, time.Minute)
			dir := testRoot(t)
			admin := connect(t, srv.Servers())
			q := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[int]())
			if _, err := q.PutAll(ctx, seq(0, items)); err != nil {
				t.Fatal(err)
			}
			var env []string
			if c.contend {
				env = append(env, "ZKGEN_PREFETCH_TIMEOUT=30s") // far beyond chunkWait
			}
			got := consumerChild(t, srv.Servers(), dir, 0, c.takes, c.sig, env...)
			if !slices.Equal(got, seq(0, c.takes)) {
				t.Fatalf("the consumer took %v, want the first %d items", got, c.takes)
			}
			claims := childrenOf(t, admin, dir+"/claims")
			if len(claims) != 1 {
				t.Fatalf("claims of the stopped consumer: %v, want one", claims)
			}
			dq := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[int]())
			if c.contend {
				runtime.Contend(dq)
			}
			var drained []int
			for len(drained) < items-c.takes {
				v, err := dq.Take(ctx)
				if err != nil {
					t.Fatal(err)
				}
				drained = append(drained, v)
			}
			want := seq(c.takes, items)
			if c.contend {
				k := runtime.SpreadChunk // the claimed chunk once its claim vanished
				want = append(seq(k, items), seq(c.takes, k)...)
			}
			if !slices.Equal(drained, want) {
				t.Errorf("drained %v, want %v", drained, want)
			}
			if c.sig == syscall.SIGKILL && c.contend {
				if now := childrenOf(t, admin, dir+"/claims"); !slices.Equal(now, claims) {
					t.Errorf("claims after the drain: %v; want the killed consumer's %v, its session not ended yet", now, claims)
				}
			}
		})
	}
}

// Stats counts the items claimed at least once and not acked, not the
// chunk claim of a consumer that spreads out (it claims no item by itself).
func TestAckQueueStatsCountsItemClaims(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	q := runtime.NewAckQueue(admin, runtime.At(dir), runtime.JSONCodec[int]())
	if _, err := q.PutAll(ctx, seq(0, 10)); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, srv.Servers())
	aq := runtime.NewAckQueue(cs, runtime.At(dir), runtime.JSONCodec[int]())
	runtime.ContendAck(aq)
	for range 2 {
		if _, err := aq.Take(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if claims := childrenOf(t, admin, dir+"/claims"); len(claims) != 3 {
		t.Fatalf("claims: %v, want a chunk claim and two item claims", claims)
	}
	st, err := q.Stats(ctx)
	if err != nil || st.Claimed != 2 {
		t.Fatalf("Stats = %+v, %v; want 2 claimed", st, err)
	}
}

// A spread consumer of a priority queue whose level holds nothing but
// another consumer's chunk, claimed by a live session that never takes
// (as a frozen process's), takes those items after chunkWait instead of
// waiting for that session to end: the claim is still there afterwards.
func TestPriorityQueueStuckChunkIsTaken(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	q := runtime.NewPriorityQueue(admin, runtime.At(dir), runtime.JSONCodec[int](), 2)
	for i := range 10 {
		if err := q.Put(ctx, 0, i); err != nil {
			t.Fatal(err)
		}
	}
	holder := connect(t, srv.Servers())
	claims := dir + "/p-00/claims"
	makeDirs(t, holder, claims)
	claim := fmt.Sprintf("%s/b-0000000000.k%d-0", claims, runtime.SpreadChunk)
	if _, err := holder.Conn().Create(claim, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	cq := runtime.NewPriorityQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[int](), 2)
	runtime.ContendPriority(cq)
	tctx, cancel := context.WithTimeout(ctx, 20*time.Second) // the holder's session never ends
	defer cancel()
	var got []int
	for len(got) < 10 {
		v, err := cq.Take(tctx)
		if err != nil {
			t.Fatalf("took %v, then: %v", got, err)
		}
		got = append(got, v)
	}
	if !slices.Equal(got, seq(0, 10)) {
		t.Errorf("took %v, want 0 to 9 in order", got)
	}
	if kids := childrenOf(t, admin, claims); !slices.Equal(kids, []string{path.Base(claim)}) {
		t.Errorf("claims after the takes: %v, want the holder's", kids)
	}
}

// A spread consumer that passed a sealed bucket whose items sit in another
// consumer's chunk, and has nothing else left, waits for that claim
// chunkWait at most, as it does for a chunk of its current bucket: then it
// takes those items as a lone consumer would. The claim's holder here is a
// live session that never takes (a process frozen or cut off while its
// session lives on in the server), so without the bound the items wait for
// that session's end. (Seen in TestPartitionQueues: a drain stuck on a
// chunk of a sealed bucket whose claimer's client had given its session up
// while the server kept it.)
func TestQueueStuckChunkInSealedBucketIsTaken(t *testing.T) {
	for _, ack := range []bool{false, true} {
		t.Run(fmt.Sprintf("ack=%v", ack), func(t *testing.T) {
			srv := server(t)
			ctx := testCtx(t, time.Minute)
			dir := testRoot(t)
			admin := connect(t, srv.Servers())
			opt := runtime.WithBucketSize(16)
			put := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[int](), opt).Put
			if ack {
				put = runtime.NewAckQueue(admin, runtime.At(dir), runtime.JSONCodec[int](), opt).Put
			}
			for i := range 20 { // 0..15 fill the first bucket, which is sealed
				if err := put(ctx, i); err != nil {
					t.Fatal(err)
				}
			}
			holder := connect(t, srv.Servers())
			claims := dir + "/claims"
			makeDirs(t, holder, claims)
			claim := fmt.Sprintf("%s/b-0000000000.k%d-0", claims, runtime.SpreadChunk)
			if _, err := holder.Conn().Create(claim, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			cs := connect(t, srv.Servers())
			take := func(ctx context.Context) (int, error) { return 0, nil }
			if ack {
				q := runtime.NewAckQueue(cs, runtime.At(dir), runtime.JSONCodec[int](), opt)
				runtime.ContendAck(q)
				take = func(ctx context.Context) (int, error) {
					d, err := q.Take(ctx)
					if err != nil {
						return 0, err
					}
					return d.Value, d.Ack(ctx)
				}
			} else {
				q := runtime.NewQueue(cs, runtime.At(dir), runtime.JSONCodec[int](), opt)
				runtime.Contend(q)
				take = q.Take
			}
			tctx, cancel := context.WithTimeout(ctx, 20*time.Second) // the holder's session never ends
			defer cancel()
			var got []int
			for len(got) < 20 {
				v, err := take(tctx)
				if err != nil {
					t.Fatalf("took %v, then: %v", got, err)
				}
				got = append(got, v)
			}
			slices.Sort(got)
			if !slices.Equal(got, seq(0, 20)) {
				t.Errorf("took %v, want 0 to 19", got)
			}
			if kids := childrenOf(t, admin, claims); !slices.Equal(kids, []string{path.Base(claim)}) {
				t.Errorf("claims after the takes: %v, want the holder's", kids)
			}
		})
	}
}

// A consumer that is alive but slow (an item every 300 ms, well within the
// second after which an idle consumer gives its claim up) keeps its chunk
// claimed, and every take of it wakes the consumers that wait for that
// claim. They wait 2 s at most all the same, counted from when they began
// to wait: then they take the slow consumer's items too. Before, each
// wake-up started their 2 s again, and a fast consumer sat idle until the
// slow one had taken its whole chunk (issue 41: 9.4 s of idling with one
// consumer at 150 ms an item). Nothing is taken twice or lost, and each
// consumer's items outside the slow one's chunk come in put order.
func TestQueueSlowConsumerHoldsNoOneBack(t *testing.T) {
	const items = runtime.SpreadChunk*2 + 2 // the slow consumer's chunk, the fast one's, and two more
	srv := server(t)
	for _, ack := range []bool{false, true} {
		t.Run(map[bool]string{false: "at-most-once", true: "at-least-once"}[ack], func(t *testing.T) {
			ctx := testCtx(t, 2*time.Minute)
			dir := testRoot(t)
			admin := connect(t, srv.Servers())
			put := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[int]()).PutAll
			if ack {
				put = runtime.NewAckQueue(admin, runtime.At(dir), runtime.JSONCodec[int]()).PutAll
			}
			if _, err := put(ctx, seq(0, items)); err != nil {
				t.Fatal(err)
			}
			slow := spreadTaker(t, connect(t, srv.Servers()), dir, ack)
			fast1 := spreadTaker(t, connect(t, srv.Servers()), dir, ack)
			fast2 := spreadTaker(t, connect(t, srv.Servers()), dir, ack)
			first, err := slow(ctx) // item 0: the slow consumer claims chunk 0
			if err != nil || first != 0 {
				t.Fatalf("slow consumer's first take = %d, %v; want 0", first, err)
			}
			var mu sync.Mutex
			taken := 1
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			count := func() {
				mu.Lock()
				defer mu.Unlock()
				if taken++; taken == items {
					cancel()
				}
			}
			got := [3][]int{{first}, nil, nil}
			var wg sync.WaitGroup
			for i, take := range []func(context.Context) (int, error){slow, fast1, fast2} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						if i == 0 {
							// The slow consumer's work on an item.
							select {
							case <-time.After(300 * time.Millisecond):
							case <-cctx.Done():
								return
							}
						}
						v, err := take(cctx)
						if err != nil {
							if cctx.Err() == nil {
								t.Error(err)
							}
							return
						}
						got[i] = append(got[i], v)
						count()
					}
				}()
			}
			wg.Wait()
			checkOnce(t, got[:], items)
			if !slices.IsSorted(got[0]) {
				t.Errorf("the slow consumer took its items out of put order: %v", got[0])
			}
			inChunk := 0
			for i, vs := range got[1:] {
				var rest []int
				for _, v := range vs {
					if v < runtime.SpreadChunk {
						inChunk++
					} else {
						rest = append(rest, v)
					}
				}
				if !slices.IsSorted(rest) {
					t.Errorf("fast consumer %d took items outside the slow one's chunk out of put order: %v", i, rest)
				}
			}
			t.Logf("slow consumer took %d items, fast ones %d and %d (%d of the slow one's chunk)", len(got[0]), len(got[1]), len(got[2]), inChunk)
			if inChunk < (runtime.SpreadChunk-1)/2 {
				t.Errorf("the fast consumers took %d of the slow one's %d chunk items: they waited for the slow consumer instead of 2 s at most",
					inChunk, runtime.SpreadChunk-1)
			}
		})
	}
}

// spreadTaker returns a function that takes one item of the queue at dir
// with a consumer that spreads out (as after a race lost), acking it at
// once when ack is set.
func spreadTaker(t *testing.T, s *runtime.Session, dir string, ack bool) func(context.Context) (int, error) {
	t.Helper()
	if !ack {
		q := runtime.NewQueue(s, runtime.At(dir), runtime.JSONCodec[int]())
		runtime.Contend(q)
		return q.Take
	}
	q := runtime.NewAckQueue(s, runtime.At(dir), runtime.JSONCodec[int]())
	runtime.ContendAck(q)
	return func(ctx context.Context) (int, error) {
		d, err := q.Take(ctx)
		if err != nil {
			return 0, err
		}
		return d.Value, d.Ack(context.WithoutCancel(ctx))
	}
}

// checkOnce fails the test unless the consumers' items (got) are 0..items-1,
// each taken once.
func checkOnce(t *testing.T, got [][]int, items int) {
	t.Helper()
	seen := make([]int, items)
	for _, vs := range got {
		for _, v := range vs {
			if v < 0 || v >= items {
				t.Fatalf("took %d, not an item put", v)
			}
			seen[v]++
		}
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("item %d taken %d times", v, n)
		}
	}
}
