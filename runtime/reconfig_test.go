package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Replacing every server of an ensemble, one at a time, under a service
// (issue 42, docs/sessions.md "Servers that move"): a 3-server ensemble
// with dynamic reconfiguration; a service under Supervise holds a lock, a
// TTL lease (renewed every 2 s) and all 4 partitions of a partitioner, and
// consumes a queue; a rival session waits for the lock and the lease and
// produces the queue's items, at most 4 unconsumed at a time, throughout.
// Then three times: a new server joins (reconfig add), an old one leaves
// (reconfig remove) and its process is killed. At the end none of the
// original servers runs, and the service is still on its first session,
// with its lock (same token, a guarded write goes through), its lease
// (every renewal went through), its partitions (same tokens, no set
// without one of them on its Owned stream, their owner nodes its own), every
// item consumed once; the rival got neither the lock nor the lease. Then
// the service's session is closed: Supervise retires it and opens the next
// on the new servers, which the old session learned from the
// configuration.
//
// With ZKGEN_RECONFIG_NEGATIVE=1 (reconfigOpts) the test must fail: once
// the last original server is gone, nothing answers the sessions.
func TestReconfigReplaceEnsemble(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	e := zktest.StartEnsemble(t, 3, zktest.WithReconfig(), zktest.WithTTLNodes(100*time.Millisecond))
	original := e.Servers()
	ctx := testCtx(t, 5*time.Minute)
	dir := testRoot(t)
	opts := reconfigOpts()
	sv, holds := superviseService(t, ctx, original, dir, opts)
	ev1 := sv.next(t, ctx)
	svc := held(t, ctx, holds)
	rival := startRival(t, ctx, original, dir, svc.tally, opts)

	began := time.Now()
	for old := range 3 {
		step := time.Now()
		added, err := e.Join()
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Leave(old); err != nil {
			t.Fatal(err)
		}
		t.Logf("server %d replaced by server %d in %v", old, added, time.Since(step).Round(time.Millisecond))
	}
	took := time.Since(began)
	for i, addr := range original {
		if e.Server(i).Running() || slices.Contains(e.Servers(), addr) {
			t.Fatalf("original server %d (%s) still runs or is still a member: %v", i, addr, e.Servers())
		}
	}
	produced := rival.stop(t)
	svc.checkKept(t, ctx, ev1.ID, dir)
	rival.checkWaiting(t)
	if err := svc.tally.waitFor(ctx, produced); err != nil {
		t.Fatalf("items consumed: %d distinct of %d put: %v", svc.tally.distinct(), produced, err)
	}
	if d := svc.tally.repeated(); d != 0 {
		t.Errorf("%d items consumed more than once", d)
	}
	ownersOnly(t, connect(t, e.Servers()), dir+"/part/owners", ev1.ID, 4)
	t.Logf("all 3 servers replaced in %v under session 0x%x: %d items put and consumed once each, %d lease renewals",
		took.Round(time.Millisecond), ev1.ID, produced, svc.renewals.Load())

	svc.s.Close()
	next, cancel := context.WithTimeout(ctx, time.Minute) // the old session's servers are all gone
	defer cancel()
	ev2 := sv.next(t, next)
	s2 := held(t, next, holds).s
	if ev2.PrevID != ev1.ID || !slices.Contains(e.Servers(), s2.Conn().Server()) {
		t.Fatalf("next session %+v on %s; want one after 0x%x on one of %v", ev2, s2.Conn().Server(), ev1.ID, e.Servers())
	}
	if err := sv.stop(t, ctx); err != nil {
		t.Fatalf("Supervise = %v", err)
	}
}

// reconfigOpts are the sessions' options in the reconfiguration tests:
// with ZKGEN_RECONFIG_NEGATIVE=1 they keep the servers they were given,
// as before issue 42, and the tests must fail.
func reconfigOpts() []runtime.Option {
	opts := []runtime.Option{runtime.WithSessionTimeout(30 * time.Second)}
	if os.Getenv("ZKGEN_RECONFIG_NEGATIVE") == "1" {
		opts = append(opts, runtime.WithEnsembleConfig(false))
	}
	return opts
}

// A session on a server that a reconfiguration removes moves to a server
// the configuration still names, while the removed one still runs
// (ZooKeeper lets a removed server go on serving its clients until it is
// stopped). The session is given that server alone; from the configuration
// it reads at Connect it knows the other two.
func TestReconfigMovesOffRemovedServer(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	e := zktest.StartEnsemble(t, 3, zktest.WithReconfig())
	ctx := testCtx(t, 2*time.Minute)
	moved := &logged{substr: "moving the session off", seen: make(chan struct{})}
	s := connect(t, []string{e.Server(0).Addr()}, append(reconfigOpts(), runtime.WithLogger(slog.New(moved)))...)
	id := s.ID()
	removed := time.Now()
	if err := e.Remove(0); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	select {
	case <-moved.seen:
	case <-wait.Done():
		t.Fatalf("the session did not leave the removed server %s (it is on %s)", e.Server(0).Addr(), s.Conn().Server())
	}
	if _, err := s.Exists(ctx, "/"); err != nil { // retried until the session is back
		t.Fatal(err)
	}
	if on := s.Conn().Server(); !slices.Contains(e.Servers(), on) || !e.Server(0).Running() || s.ID() != id || s.Err() != nil {
		t.Fatalf("session 0x%x (was 0x%x, %v) on %s; want one of %v, with the removed server still running (%v)",
			s.ID(), id, s.Err(), on, e.Servers(), e.Server(0).Running())
	}
	t.Logf("the session moved %v after the reconfiguration began", time.Since(removed).Round(time.Millisecond))
}

// logged is a log handler that closes seen when a message containing
// substr is logged.
type logged struct {
	substr string
	once   sync.Once
	seen   chan struct{}
}

func (l *logged) Enabled(context.Context, slog.Level) bool { return true }

func (l *logged) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, l.substr) {
		l.once.Do(func() { close(l.seen) })
	}
	return nil
}

func (l *logged) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logged) WithGroup(string) slog.Handler      { return l }

// superviseService runs the service under Supervise on servers: on its
// first session it holds everything (holdAll), on later ones nothing. What
// it holds on each session comes on holds.
func superviseService(t *testing.T, ctx context.Context, servers []string, dir string, opts []runtime.Option) (*supervised, <-chan *serviceHold) {
	holds := make(chan *serviceHold, 4)
	tl := newTally()
	var gen atomic.Int32
	sv := superviseWith(t, ctx, servers, func(ctx context.Context, s *runtime.Session) error {
		h := &serviceHold{s: s, tally: tl}
		if gen.Add(1) == 1 {
			if err := h.holdAll(ctx, dir); err != nil {
				return err
			}
		}
		holds <- h
		<-ctx.Done()
		return context.Cause(ctx)
	}, opts...)
	return sv, holds
}

// held waits for what the service holds on its next session.
func held(t *testing.T, ctx context.Context, holds <-chan *serviceHold) *serviceHold {
	t.Helper()
	select {
	case h := <-holds:
		return h
	case <-ctx.Done():
		t.Fatal("the service holds nothing")
	}
	return nil
}

// serviceHold is what the service holds on one session.
type serviceHold struct {
	s        *runtime.Session
	tally    *tally
	lock     *runtime.Lock
	lease    *runtime.TTLLease
	assign   *runtime.Assignment[string]
	tokens   [4]int64 // the partitions', once all owned
	lockTok  int64
	leaseTok int64
	renewals atomic.Int64
	mu       sync.Mutex
	lost     []string // what the service lost, as it saw it
}

const reconfigTTL = 20 * time.Second

// holdAll takes the lock, the lease and the 4 partitions, and starts
// renewing the lease, watching the partitions and consuming the queue.
func (h *serviceHold) holdAll(ctx context.Context, dir string) error {
	h.lock = runtime.NewLock(h.s, runtime.At(dir+"/lock"))
	if err := h.lock.Lock(ctx); err != nil {
		return err
	}
	var err error
	if h.lease, err = runtime.NewTTLLeases(h.s, runtime.At(dir+"/lease"), 1, reconfigTTL).Acquire(ctx, "service"); err != nil {
		return err
	}
	p := runtime.NewPartitioner(h.s, runtime.At(dir+"/part"), 4, runtime.StringCodec())
	if h.assign, err = p.Join(ctx, "service"); err != nil {
		return err
	}
	owned := h.assign.Owned()
	for set := range owned {
		if len(set) == 4 {
			break
		}
	}
	for i := range h.tokens {
		h.tokens[i] = h.assign.Token(i)
	}
	h.lockTok, h.leaseTok = h.lock.Token(), h.lease.Token()
	go h.watchOwned(owned)
	go h.renew(ctx)
	q := runtime.NewAckQueue(h.s, runtime.At(dir+"/queue"), runtime.JSONCodec[int]())
	go q.Consume(ctx, func(_ context.Context, item int) error {
		h.tally.add(item)
		return nil
	})
	return nil
}

func (h *serviceHold) loss(what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lost = append(h.lost, what)
}

// watchOwned notes every set without all 4 partitions.
func (h *serviceHold) watchOwned(owned <-chan []int) {
	for set := range owned {
		if len(set) != 4 {
			h.loss(fmt.Sprintf("partitions: owned %v", set))
		}
	}
}

// renew renews the lease every 2 s until ctx ends. A connection error
// leaves the lease as it was; the lease's end is a loss.
func (h *serviceHold) renew(ctx context.Context) {
	tick := time.NewTicker(2 * time.Second) // the renewal pace, not a synchronisation
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := h.lease.Renew(ctx)
		switch {
		case err == nil:
			h.renewals.Add(1)
		case errors.Is(err, runtime.ErrLeaseExpired), errors.Is(err, runtime.ErrNotHeld):
			h.loss(fmt.Sprintf("lease: %v", err))
			return
		}
	}
}

// checkKept checks that the service kept its session and all it held.
func (h *serviceHold) checkKept(t *testing.T, ctx context.Context, id int64, dir string) {
	t.Helper()
	if _, err := h.lock.Guarded(ctx, &zk.CreateRequest{Path: dir + "/by-lock", Acl: zk.WorldACL(zk.PermAll)}); err != nil {
		t.Fatalf("write guarded by the lock after the replacement: %v (session: %v)", err, h.s.Err())
	}
	if h.s.ID() != id || h.s.Err() != nil {
		t.Fatalf("session 0x%x, %v; want 0x%x alive", h.s.ID(), h.s.Err(), id)
	}
	select {
	case <-h.lock.Lost():
		t.Error("lock lost")
	default:
	}
	if !h.lock.Held() || h.lock.Token() != h.lockTok {
		t.Errorf("lock: held %v, token %d (was %d)", h.lock.Held(), h.lock.Token(), h.lockTok)
	}
	if !h.lease.Held() || h.lease.Token() != h.leaseTok || h.renewals.Load() == 0 {
		t.Errorf("lease: held %v, token %d (was %d), %d renewals", h.lease.Held(), h.lease.Token(), h.leaseTok, h.renewals.Load())
	}
	for i, tok := range h.tokens {
		if !h.assign.Owns(i) || h.assign.Token(i) != tok {
			t.Errorf("partition %d: owned %v, token %d (was %d)", i, h.assign.Owns(i), h.assign.Token(i), tok)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.lost) > 0 {
		t.Errorf("the service lost: %v", h.lost)
	}
}

// ownersOnly checks that dir holds n ephemeral nodes, all of session id.
func ownersOnly(t *testing.T, admin *runtime.Session, dir string, id int64, n int) {
	t.Helper()
	kids := childrenOf(t, admin, dir)
	for _, k := range kids {
		_, st, err := admin.Conn().Get(path.Join(dir, k))
		if err != nil || st.EphemeralOwner != id {
			t.Errorf("%s/%s: owner %v, %v; want 0x%x", dir, k, st, err, id)
		}
	}
	if len(kids) != n {
		t.Errorf("%s: %v, want %d nodes", dir, kids, n)
	}
}

// rival contends for the lock and the lease, and produces the queue's
// items.
type rival struct {
	locked, leased chan error
	stopProducing  context.CancelFunc
	produced       chan int
}

func startRival(t *testing.T, ctx context.Context, servers []string, dir string, tl *tally, opts []runtime.Option) *rival {
	s := connect(t, servers, opts...)
	r := &rival{locked: make(chan error, 1), leased: make(chan error, 1), produced: make(chan int, 1)}
	go func() { r.locked <- runtime.NewLock(s, runtime.At(dir+"/lock")).Lock(ctx) }()
	go func() {
		_, err := runtime.NewTTLLeases(s, runtime.At(dir+"/lease"), 1, reconfigTTL).Acquire(ctx, "rival")
		r.leased <- err
	}()
	pctx, stop := context.WithCancel(ctx)
	r.stopProducing = stop
	q := runtime.NewAckQueue(s, runtime.At(dir+"/queue"), runtime.JSONCodec[int]())
	go func() {
		n := 0
		for ; tl.slot(pctx); n++ {
			if err := q.Put(ctx, n); err != nil {
				t.Errorf("Put(%d): %v", n, err)
				break
			}
		}
		r.produced <- n
	}()
	return r
}

// stop stops the producer; it returns how many items it put.
func (r *rival) stop(t *testing.T) int {
	r.stopProducing()
	return <-r.produced
}

// checkWaiting checks that the rival got neither the lock nor the lease.
func (r *rival) checkWaiting(t *testing.T) {
	t.Helper()
	select {
	case err := <-r.locked:
		t.Errorf("the rival's Lock returned %v while the service held the lock", err)
	case err := <-r.leased:
		t.Errorf("the rival's Acquire returned %v while the service held the lease", err)
	default:
	}
}

// tally counts the items consumed, and lets the producer run at most 4
// items ahead of the consumer.
type tally struct {
	window  chan struct{} // one per item put and not yet consumed
	mu      sync.Mutex
	seen    map[int]int
	changed chan struct{} // closed when an item is first seen
}

func newTally() *tally {
	return &tally{window: make(chan struct{}, 4), seen: map[int]int{}, changed: make(chan struct{})}
}

// slot waits for room for one more item; false when ctx ended first.
func (tl *tally) slot(ctx context.Context) bool {
	select {
	case tl.window <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (tl *tally) add(item int) {
	tl.mu.Lock()
	tl.seen[item]++
	first := tl.seen[item] == 1
	if first {
		close(tl.changed)
		tl.changed = make(chan struct{})
	}
	tl.mu.Unlock()
	if first {
		<-tl.window
	}
}

func (tl *tally) distinct() int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return len(tl.seen)
}

func (tl *tally) repeated() int {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	n := 0
	for _, c := range tl.seen {
		if c > 1 {
			n++
		}
	}
	return n
}

// waitFor waits until n distinct items were consumed.
func (tl *tally) waitFor(ctx context.Context, n int) error {
	for {
		tl.mu.Lock()
		got, ch := len(tl.seen), tl.changed
		tl.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
