package runtime_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// TestSoak is a bounded randomized soak test: a handful of workers, each on
// its own session behind its own fault-injecting proxy, loop random
// operations over every recipe while a fault injector cuts, delays, pauses
// and expires their sessions. Invariants are checked as the operations
// return and once more at the end, after every client is closed and the
// queues are drained.
//
// Every random choice — which operation a worker runs next, its arguments,
// its think times, which fault hits which worker and when — comes from
// math/rand/v2 generators seeded with the printed seed, one per worker and
// one for the injector. The seed therefore reproduces the schedule of
// operations and faults, not the goroutine interleaving, which belongs to
// the Go scheduler and the network: a failure found with a seed is likely,
// not certain, to recur with it.
//
//	go test ./runtime -run '^TestSoak$' -count 1                                   # short run (default 15s of load)
//	go test ./runtime -run '^TestSoak$' -count 1 -soak.duration 10m -soak.seed N   # long run, replaying seed N
//
// -soak.skip queue,ackqueue leaves recipes out, to isolate a failure.
// ZKGEN_SOAK_SEED, ZKGEN_SOAK_DURATION and ZKGEN_SOAK_SKIP do the same as the
// flags.
var (
	soakSeedFlag     = flag.String("soak.seed", "", "TestSoak: seed of the random schedule (default: ZKGEN_SOAK_SEED, else time-based)")
	soakDurationFlag = flag.Duration("soak.duration", 0, "TestSoak: how long the workload runs (default: ZKGEN_SOAK_DURATION, else 15s)")
	soakSkipFlag     = flag.String("soak.skip", "", "TestSoak: comma-separated recipes to leave out, to isolate a failure (default: ZKGEN_SOAK_SKIP): "+strings.Join(soakRecipes, ","))
)

// soakRecipes are the recipes the workers exercise.
var soakRecipes = []string{"lock", "rwlock", "semaphore", "queue", "ackqueue", "election", "group", "config", "counter", "barrier"}

func soakSkip(t *testing.T) map[string]bool {
	s := *soakSkipFlag
	if s == "" {
		s = os.Getenv("ZKGEN_SOAK_SKIP")
	}
	skip := map[string]bool{}
	for _, r := range strings.Split(s, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if !slices.Contains(soakRecipes, r) {
			t.Fatalf("soak.skip: unknown recipe %q (have %v)", r, soakRecipes)
		}
		skip[r] = true
	}
	return skip
}

const (
	soakDefaultDuration = 15 * time.Second
	soakWorkers         = 6
	// soakSessionTimeout is the workers' session timeout. A cut-off client
	// gives its session up at 35% of it (2.8s), so a holder learns its
	// loss well before the (standalone) server hands the lock on.
	soakSessionTimeout = 8 * time.Second
	soakLeases         = 2 // semaphore leases
	soakBucket         = 4 // FIFO queue bucket size: buckets roll over often
)

// soakSeed returns the seed to use: the flag, else the environment, else the
// clock.
func soakSeed(t *testing.T) uint64 {
	s := *soakSeedFlag
	if s == "" {
		s = os.Getenv("ZKGEN_SOAK_SEED")
	}
	if s == "" {
		return uint64(time.Now().UnixNano())
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		t.Fatalf("soak seed %q: %v", s, err)
	}
	return v
}

func soakDuration(t *testing.T) time.Duration {
	if d := *soakDurationFlag; d > 0 {
		return d
	}
	if s := os.Getenv("ZKGEN_SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("ZKGEN_SOAK_DURATION %q: want a positive duration (%v)", s, err)
		}
		return d
	}
	return soakDefaultDuration
}

func closed[T any](ch <-chan T) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// soakSession is one session of a worker. forced is set by the injector just
// before it expires the session on the server behind the client's back: from
// then on the client may believe it holds what the server has handed on
// (nothing can tell it in time; fencing tokens exist for that), so its
// tenures are not counted by the exclusion checks.
type soakSession struct {
	s      *runtime.Session
	worker int
	gen    int
	forced atomic.Bool
}

// tenure is one hold of a lock side, lease or leadership, as the holder saw
// it when its acquire returned.
type tenure struct {
	who   string
	ws    *soakSession
	lost  <-chan struct{}
	token int64 // lock token, election epoch; 0 for leases
	write bool  // exclusive side (every lock and leadership)
}

// told reports whether the holder has been told its tenure ended (Lost, or
// the session's end), or its session was expired behind its back.
func (t *tenure) told() bool {
	return closed(t.lost) || closed(t.ws.s.Done()) || t.ws.forced.Load()
}

// exclusion checks one mutual-exclusion contract from the holders' side: at
// most limit counted holders at once (for a read/write lock: no writer with
// anyone else), and, with tokens, every holder's token above the token of
// every earlier conflicting holder. A holder counts from its acquire's return
// until it calls the release, or until it is told it lost.
type exclusion struct {
	sk     *soak
	name   string
	limit  int
	rw     bool
	tokens bool

	mu       sync.Mutex
	live     map[*tenure]struct{}
	maxWrite int64 // greatest token of a counted exclusive holder
	maxRead  int64 // greatest token of a counted shared holder
	peak     int
	late     int // acquires that returned to a holder already told it lost
}

func newExclusion(sk *soak, name string, limit int, rw, tokens bool) *exclusion {
	return &exclusion{sk: sk, name: name, limit: limit, rw: rw, tokens: tokens, live: map[*tenure]struct{}{}}
}

func (x *exclusion) acquire(t *tenure) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if t.told() {
		x.late++
		return
	}
	var others []string
	for o := range x.live {
		if o.told() {
			delete(x.live, o)
			continue
		}
		if !x.rw || t.write || o.write {
			others = append(others, fmt.Sprintf("%s(session %d.%d, token %d)", o.who, o.ws.worker, o.ws.gen, o.token))
		}
	}
	if x.rw && len(others) > 0 || !x.rw && len(others) >= x.limit {
		x.sk.failf("%s: %s acquired (token %d) while held by %v, none of whom was told it lost", x.name, t.who, t.token, others)
	}
	if x.tokens {
		floor := x.maxWrite
		if t.write {
			floor = max(floor, x.maxRead)
		}
		if t.token <= floor {
			x.sk.failf("%s: %s got token %d, not above %d of an earlier holder", x.name, t.who, t.token, floor)
		}
		if t.write {
			x.maxWrite = max(x.maxWrite, t.token)
		} else {
			x.maxRead = max(x.maxRead, t.token)
		}
	}
	x.live[t] = struct{}{}
	x.peak = max(x.peak, len(x.live))
}

// release is called before the holder releases: from then on another may
// acquire.
func (x *exclusion) release(t *tenure) {
	x.mu.Lock()
	delete(x.live, t)
	x.mu.Unlock()
}

// queueLedger records every put and take of one queue.
type queueLedger struct {
	name string
	ack  bool

	mu     sync.Mutex
	put    map[string]string // id → pending, ok, uncertain, failed
	taken  map[string]int    // at-most-once: takes that returned the item
	budget int               // items that uncertain takes may have removed undelivered
	maybe  int               // items that timed-out takes say they may have removed
	// at-least-once
	acked      map[string]int
	ackUnknown map[string]bool         // an Ack whose outcome is unknown
	claims     map[string]*soakSession // live deliveries, by item
	delivered  int
	undrained  bool // the final drain failed: the lost-item check is skipped
}

func newLedger(name string, ack bool) *queueLedger {
	return &queueLedger{name: name, ack: ack, put: map[string]string{}, taken: map[string]int{},
		acked: map[string]int{}, ackUnknown: map[string]bool{}, claims: map[string]*soakSession{}}
}

// soak is the shared state of one run.
type soak struct {
	t    *testing.T
	seed uint64
	dur  time.Duration
	skip map[string]bool
	srv  *zktest.Server
	root string
	ctx  context.Context
	stop chan struct{} // closed when the workload ends
	log  *slog.Logger

	lockX, rwX, semX, elX *exclusion
	q, aq                 *queueLedger

	cfgMu  sync.Mutex
	cfgVer map[runtime.Version]string // value id seen at each version

	ctrMu  sync.Mutex
	ctrOK  int64 // sum of successful Adds
	ctrUnk int64 // sum of Adds with unknown outcome
	ctrVal map[int64]string

	statMu sync.Mutex
	ops    map[string]int // recipe → operations
	errs   map[string]int // recipe/class → count
	faults map[string]int

	failures atomic.Int64

	ownMu  sync.Mutex
	owners map[int64]string // session id → whose it is, for orphan reports
}

// own records whose session id is.
func (sk *soak) own(id int64, who string) {
	sk.ownMu.Lock()
	sk.owners[id] = who
	sk.ownMu.Unlock()
}

// owner says whose session id is.
func (sk *soak) owner(id int64) string {
	sk.ownMu.Lock()
	defer sk.ownMu.Unlock()
	if who, ok := sk.owners[id]; ok {
		return who
	}
	return "a session no client of the test learnt"
}

func (sk *soak) failf(format string, args ...any) {
	sk.failures.Add(1)
	sk.t.Errorf("[soak seed %d] "+format, append([]any{sk.seed}, args...)...)
}

func (sk *soak) count(m map[string]int, key string) {
	sk.statMu.Lock()
	m[key]++
	sk.statMu.Unlock()
}

func (sk *soak) reproduce() string {
	cmd := fmt.Sprintf("go test ./runtime -run '^TestSoak$' -count 1 -race -soak.seed %d -soak.duration %v", sk.seed, sk.dur)
	if len(sk.skip) > 0 {
		var rs []string
		for r := range sk.skip {
			rs = append(rs, r)
		}
		slices.Sort(rs)
		cmd += " -soak.skip " + strings.Join(rs, ",")
	}
	return cmd
}

// errClass sorts an operation's error into what the contracts allow.
func errClass(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, runtime.ErrPutUncertain), errors.Is(err, runtime.ErrTakeUncertain):
		return "uncertain"
	case errors.Is(err, runtime.ErrSessionExpired), errors.Is(err, runtime.ErrClosed):
		return "session"
	case errors.Is(err, runtime.ErrLockLost), errors.Is(err, runtime.ErrLeadershipLost),
		errors.Is(err, runtime.ErrMembershipLost), errors.Is(err, runtime.ErrClaimLost):
		return "lost"
	case errors.Is(err, runtime.ErrVersionConflict):
		return "conflict"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "timeout"
	case errors.Is(err, runtime.ErrOutcomeUnknown), errors.Is(err, runtime.ErrRetriesExhausted), runtime.IsRecoverable(err):
		return "recoverable"
	}
	return "unexpected"
}

// note counts the outcome of one operation and fails on an error no
// contract allows.
func (w *soakWorker) note(recipe string, err error) string {
	c := errClass(err)
	w.sk.count(w.sk.ops, recipe)
	if c != "ok" {
		w.sk.count(w.sk.errs, recipe+"/"+c)
	}
	if c == "unexpected" {
		w.sk.failf("w%d %s: unexpected error: %v", w.id, recipe, err)
	}
	return c
}

type soakCfg struct {
	ID string `json:"id"`
}

// soakWorker is one client: a proxy, its current session and handles on it.
type soakWorker struct {
	id  int
	sk  *soak
	p   *zktest.Proxy
	r   *rand.Rand
	cur atomic.Pointer[soakSession] // read by the injector
	ws  *soakSession
	gen int
	seq int
	// blackholed is set while the injector partitions this worker.
	blackholed atomic.Bool

	lock   *runtime.Lock
	rd, wr runtime.LockHandle
	sem    *runtime.Semaphore
	q      *runtime.Queue[string]
	aq     *runtime.AckQueue[string]
	el     *runtime.Election[string]
	grp    *runtime.Group[string]
	cfg    *runtime.Config[soakCfg]
	ctr    *runtime.Counter
	bar    *runtime.Barrier

	lastCfg runtime.Version
}

func (sk *soak) at(name string) runtime.Path { return runtime.At(sk.root).Lit(name) }

// connect opens a new session for the worker and builds its handles.
func (w *soakWorker) connect() error {
	s, err := runtime.Connect(w.sk.ctx, viaProxy(w.p), runtime.WithSessionTimeout(soakSessionTimeout), runtime.WithLogger(w.sk.log))
	if err != nil {
		return err
	}
	w.gen++
	w.ws = &soakSession{s: s, worker: w.id, gen: w.gen}
	sk0 := w.sk
	sk0.own(s.ID(), fmt.Sprintf("worker w%d.%d", w.id, w.gen))
	w.cur.Store(w.ws)
	sk := w.sk
	w.lock = runtime.NewLock(s, sk.at("lock"))
	rw := runtime.NewRWLock(s, sk.at("rwlock"))
	w.rd, w.wr = rw.Read(), rw.Write()
	w.sem = runtime.NewSemaphore(s, sk.at("sem"), soakLeases)
	w.q = runtime.NewQueue(s, sk.at("queue"), runtime.StringCodec(), runtime.WithBucketSize(soakBucket))
	w.aq = runtime.NewAckQueue(s, sk.at("ackqueue"), runtime.StringCodec(), runtime.WithBucketSize(soakBucket))
	w.el = runtime.NewElection(s, sk.at("election"), runtime.StringCodec())
	w.grp = runtime.NewGroup(s, sk.at("group"), runtime.StringCodec())
	w.cfg = runtime.NewConfig(s, sk.at("config"), runtime.JSONCodec[soakCfg]())
	w.ctr = runtime.NewCounter(s, sk.at("counter"))
	w.bar = runtime.NewBarrier(s, sk.at("barrier"))
	return nil
}

func (w *soakWorker) nextID(kind string) string {
	w.seq++
	return fmt.Sprintf("w%d-%s%d", w.id, kind, w.seq)
}

func (w *soakWorker) who() string { return fmt.Sprintf("w%d.%d", w.id, w.gen) }

// think waits a random while: workload pacing, not synchronisation.
func (w *soakWorker) think(maxMS int) {
	d := time.Duration(w.r.IntN(maxMS+1)) * time.Millisecond
	if d == 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-w.sk.ctx.Done():
	}
}

// opCtx bounds one operation between lo and hi milliseconds.
func (w *soakWorker) opCtx(lo, hi int) (context.Context, context.CancelFunc) {
	return context.WithTimeout(w.sk.ctx, time.Duration(lo+w.r.IntN(hi-lo+1))*time.Millisecond)
}

// hold keeps a tenure for a random while, watching for its loss. When the
// session has ended the tenure's Lost must close: the holder is told.
func (w *soakWorker) hold(what string, lost <-chan struct{}) {
	d := time.Duration(w.r.IntN(120)) * time.Millisecond
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-lost:
		w.sk.count(w.sk.errs, what+"/told-lost")
	case <-tm.C:
	case <-w.sk.ctx.Done():
	}
	if closed(w.ws.s.Done()) {
		// A liveness bound, generous: Lost closes as soon as the runtime
		// sees the session's end.
		bound := time.NewTimer(30 * time.Second)
		defer bound.Stop()
		select {
		case <-lost:
		case <-bound.C:
			w.sk.failf("w%d %s: the session ended (%v) but Lost did not close", w.id, what, w.ws.s.Err())
		case <-w.sk.ctx.Done():
			w.sk.failf("w%d %s: the session ended (%v) but Lost did not close", w.id, what, w.ws.s.Err())
		}
	}
}

// release checks the release of a tenure: after Lost closed for a loss, a
// release must not report success.
func (w *soakWorker) released(what string, lost <-chan struct{}, lostBefore bool, err error) {
	c := w.note(what+".release", err)
	if lostBefore && c == "ok" && closed(w.ws.s.Done()) {
		w.sk.failf("w%d %s: release succeeded on a tenure whose session had ended", w.id, what)
	}
	if !closed(lost) && c == "ok" {
		w.sk.failf("w%d %s: released, but Lost is still open", w.id, what)
	}
}

func (w *soakWorker) opLock() {
	ctx, cancel := w.opCtx(200, 2000)
	defer cancel()
	var err error
	held := true
	if w.r.IntN(4) == 0 {
		held, err = w.lock.TryLock(ctx)
	} else {
		err = w.lock.Lock(ctx)
	}
	if w.note("lock", err) != "ok" || !held {
		return
	}
	t := &tenure{who: w.who(), ws: w.ws, lost: w.lock.Lost(), token: w.lock.Token(), write: true}
	w.sk.lockX.acquire(t)
	w.hold("lock", t.lost)
	lostBefore := closed(t.lost)
	w.sk.lockX.release(t)
	uctx, ucancel := context.WithTimeout(w.sk.ctx, 10*time.Second)
	defer ucancel()
	w.released("lock", t.lost, lostBefore, w.lock.Unlock(uctx))
}

func (w *soakWorker) opRWLock() {
	write := w.r.IntN(3) == 0
	h, name := w.rd, "rwlock.read"
	if write {
		h, name = w.wr, "rwlock.write"
	}
	ctx, cancel := w.opCtx(200, 2000)
	defer cancel()
	if w.note(name, h.Lock(ctx)) != "ok" {
		return
	}
	t := &tenure{who: w.who(), ws: w.ws, lost: h.Lost(), token: h.Token(), write: write}
	w.sk.rwX.acquire(t)
	w.hold(name, t.lost)
	lostBefore := closed(t.lost)
	w.sk.rwX.release(t)
	uctx, ucancel := context.WithTimeout(w.sk.ctx, 10*time.Second)
	defer ucancel()
	w.released(name, t.lost, lostBefore, h.Unlock(uctx))
}

func (w *soakWorker) opSemaphore() {
	ctx, cancel := w.opCtx(200, 2000)
	defer cancel()
	le, err := w.sem.Acquire(ctx)
	if w.note("semaphore", err) != "ok" {
		return
	}
	t := &tenure{who: w.who(), ws: w.ws, lost: le.Lost(), token: le.Token(), write: true}
	w.sk.semX.acquire(t)
	w.hold("semaphore", t.lost)
	lostBefore := closed(t.lost)
	w.sk.semX.release(t)
	uctx, ucancel := context.WithTimeout(w.sk.ctx, 10*time.Second)
	defer ucancel()
	w.released("semaphore", t.lost, lostBefore, le.Release(uctx))
}

func (w *soakWorker) opElection() {
	ctx, cancel := w.opCtx(300, 2000)
	defer cancel()
	ld, err := w.el.Campaign(ctx, w.who())
	if w.note("election", err) != "ok" {
		return
	}
	t := &tenure{who: w.who(), ws: w.ws, lost: ld.Lost(), token: ld.Epoch(), write: true}
	w.sk.elX.acquire(t)
	w.hold("election", t.lost)
	lostBefore := closed(t.lost)
	w.sk.elX.release(t)
	uctx, ucancel := context.WithTimeout(w.sk.ctx, 10*time.Second)
	defer ucancel()
	w.released("election", t.lost, lostBefore, ld.Resign(uctx))
}

func (w *soakWorker) opGroup() {
	ctx, cancel := w.opCtx(1000, 3000)
	defer cancel()
	id := w.nextID("m")
	ms, err := w.grp.Join(ctx, id)
	if w.note("group", err) != "ok" {
		return
	}
	members, err := w.grp.Members(ctx)
	if w.note("group.members", err) == "ok" && !slices.Contains(members, id) && !closed(ms.Lost()) && !closed(w.ws.s.Done()) {
		w.sk.failf("w%d group: joined as %s, still a member, but Members = %v", w.id, id, members)
	}
	w.hold("group", ms.Lost())
	lostBefore := closed(ms.Lost())
	uctx, ucancel := context.WithTimeout(w.sk.ctx, 10*time.Second)
	defer ucancel()
	w.released("group", ms.Lost(), lostBefore, ms.Leave(uctx))
}

func (w *soakWorker) opQueuePut(l *queueLedger, put func(context.Context, string) error, n int) {
	ctx, cancel := w.opCtx(500, 3000)
	defer cancel()
	ids := make([]string, n)
	l.mu.Lock()
	for i := range ids {
		ids[i] = w.nextID("i")
		l.put[ids[i]] = "pending"
	}
	l.mu.Unlock()
	var err error
	for _, id := range ids {
		if err = put(ctx, id); err != nil {
			break
		}
		l.mu.Lock()
		l.put[id] = "ok"
		l.mu.Unlock()
	}
	c := w.note(l.name+".put", err)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		if l.put[id] != "pending" {
			continue
		}
		if c == "uncertain" {
			l.put[id] = "uncertain"
			c = "failed" // the puts after it were not sent
		} else {
			l.put[id] = "failed"
		}
	}
}

func (w *soakWorker) opQueueTake() {
	l := w.sk.q
	ctx, cancel := w.opCtx(100, 1500)
	defer cancel()
	n := 1 + w.r.IntN(3)
	var items []string
	var err error
	if n == 1 {
		var it string
		it, err = w.q.Take(ctx)
		if err == nil {
			items = []string{it}
		}
	} else {
		items, err = w.q.TakeN(ctx, n)
	}
	c := w.note("queue.take", err)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case c == "uncertain":
		l.budget += n
	case c == "timeout" && strings.Contains(err.Error(), "may have been removed"):
		l.maybe += n
	}
	for _, id := range items {
		l.took(w.sk, fmt.Sprintf("w%d", w.id), id)
	}
}

// took records an at-most-once take of id; l.mu is held.
func (l *queueLedger) took(sk *soak, who, id string) {
	l.taken[id]++
	switch st, ok := l.put[id]; {
	case !ok:
		sk.failf("%s: %s took %q, which nobody put", l.name, who, id)
	case st == "failed":
		sk.failf("%s: %s took %q, whose put returned an error that says it did not happen", l.name, who, id)
	}
	if l.taken[id] > 1 {
		sk.failf("%s: %q taken %d times (at-most-once)", l.name, id, l.taken[id])
	}
}

func (w *soakWorker) opAckTake() {
	l := w.sk.aq
	ctx, cancel := w.opCtx(100, 1500)
	defer cancel()
	n := 1 + w.r.IntN(2)
	var ds []*runtime.Delivery[string]
	var err error
	if n == 1 {
		var d *runtime.Delivery[string]
		d, err = w.aq.Take(ctx)
		if err == nil {
			ds = []*runtime.Delivery[string]{d}
		}
	} else {
		ds, err = w.aq.TakeN(ctx, n)
	}
	w.note("ackqueue.take", err)
	for _, d := range ds {
		l.delivered1(w.sk, w.ws, d.Value)
	}
	for _, d := range ds {
		ack := w.r.IntN(5) != 0
		w.think(30)
		actx, acancel := context.WithTimeout(w.sk.ctx, 10*time.Second)
		var err error
		if ack {
			err = d.Ack(actx)
		} else {
			// From the moment Release is called another consumer may
			// claim the item, perhaps before Release returns: the claim
			// stops counting now, as a lock holder's does when it calls
			// Unlock.
			l.releasing(w.ws, d.Value)
			err = d.Release(actx)
		}
		acancel()
		name := "ackqueue.release"
		if ack {
			name = "ackqueue.ack"
		}
		c := w.note(name, err)
		l.settled(w.sk, w.ws, d.Value, ack, c)
	}
}

// delivered1 records a delivery of id to a consumer on ws.
func (l *queueLedger) delivered1(sk *soak, ws *soakSession, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.delivered++
	switch st, ok := l.put[id]; {
	case !ok:
		sk.failf("%s: w%d got %q, which nobody put", l.name, ws.worker, id)
	case st == "failed":
		sk.failf("%s: w%d got %q, whose put returned an error that says it did not happen", l.name, ws.worker, id)
	}
	if l.acked[id] > 0 {
		sk.failf("%s: %q delivered to w%d after it was acked", l.name, id, ws.worker)
	}
	if o := l.claims[id]; o != nil && o != ws && !closed(o.s.Done()) && !o.forced.Load() {
		sk.failf("%s: %q delivered to w%d.%d while w%d.%d, whose session is alive, holds it", l.name, id, ws.worker, ws.gen, o.worker, o.gen)
	}
	l.claims[id] = ws
}

// releasing records that the consumer on ws gives id back: from now on
// another consumer may hold it.
func (l *queueLedger) releasing(ws *soakSession, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.claims[id] == ws {
		delete(l.claims, id)
	}
}

// settled records the end of a delivery: an Ack or a Release and its
// outcome class.
func (l *queueLedger) settled(sk *soak, ws *soakSession, id string, ack bool, class string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.claims[id] == ws {
		delete(l.claims, id)
	}
	if !ack {
		return
	}
	switch class {
	case "ok":
		l.acked[id]++
		if l.acked[id] > 1 {
			sk.failf("%s: %q acked %d times", l.name, id, l.acked[id])
		}
	case "lost":
		// the claim was gone: the item is delivered again
	default:
		l.ackUnknown[id] = true
	}
}

func (w *soakWorker) opConfig() {
	sk := w.sk
	ctx, cancel := w.opCtx(500, 3000)
	defer cancel()
	v, ver, err := w.cfg.Get(ctx)
	if w.note("config.get", err) != "ok" {
		return
	}
	w.seenCfg("Get", v.ID, ver)
	if w.r.IntN(4) == 0 && ver > 0 {
		ver-- // a stale version: must conflict
	}
	id := w.nextID("c")
	nv, err := w.cfg.CompareAndSet(ctx, soakCfg{id}, ver)
	switch w.note("config.cas", err) {
	case "ok":
		if nv != ver+1 {
			sk.failf("w%d config: CompareAndSet at version %d wrote version %d", w.id, ver, nv)
		}
		w.seenCfg("CompareAndSet", id, nv)
	case "conflict":
	}
}

// seenCfg records that the config had value id at version ver.
func (w *soakWorker) seenCfg(op, id string, ver runtime.Version) {
	sk := w.sk
	if ver < w.lastCfg {
		sk.failf("w%d config: %s saw version %d after version %d", w.id, op, ver, w.lastCfg)
	}
	w.lastCfg = max(w.lastCfg, ver)
	sk.cfgMu.Lock()
	defer sk.cfgMu.Unlock()
	if prev, ok := sk.cfgVer[ver]; ok && prev != id {
		sk.failf("w%d config: %s saw %q at version %d, which held %q", w.id, op, id, ver, prev)
	}
	sk.cfgVer[ver] = id
}

func (w *soakWorker) opCounter() {
	sk := w.sk
	ctx, cancel := w.opCtx(500, 3000)
	defer cancel()
	d := int64(1 + w.r.IntN(9))
	v, err := w.ctr.Add(ctx, d)
	c := w.note("counter", err)
	sk.ctrMu.Lock()
	defer sk.ctrMu.Unlock()
	if c != "ok" {
		sk.ctrUnk += d
		return
	}
	sk.ctrOK += d
	if prev, ok := sk.ctrVal[v]; ok {
		sk.failf("w%d counter: Add(%d) returned %d, as an earlier Add did (%s)", w.id, d, v, prev)
	}
	sk.ctrVal[v] = fmt.Sprintf("w%d Add(%d)", w.id, d)
}

func (w *soakWorker) opBarrier() {
	ctx, cancel := w.opCtx(50, 400)
	defer cancel()
	switch w.r.IntN(3) {
	case 0:
		w.note("barrier.raise", w.bar.Raise(ctx))
	case 1:
		w.note("barrier.lower", w.bar.Lower(ctx))
	default:
		err := w.bar.Wait(ctx)
		w.note("barrier.wait", err)
	}
}

// afterExpiry checks that the ended session reports expiry and that its
// handles refuse to work, then connects a new session.
func (w *soakWorker) afterExpiry() error {
	sk := w.sk
	ws := w.ws
	if !errors.Is(ws.s.Err(), runtime.ErrSessionExpired) {
		sk.failf("w%d: session ended with %v, want ErrSessionExpired", w.id, ws.s.Err())
	}
	sk.count(sk.faults, "expiry-observed")
	ctx, cancel := context.WithTimeout(sk.ctx, 10*time.Second)
	defer cancel()
	probe := func(what string, err error) {
		if !errors.Is(err, runtime.ErrSessionExpired) {
			sk.failf("w%d: %s on an expired session returned %v, want ErrSessionExpired", w.id, what, err)
		}
	}
	probe("Lock", w.lock.Lock(ctx))
	_, err := w.sem.Acquire(ctx)
	probe("Semaphore.Acquire", err)
	_, err = w.el.Campaign(ctx, "dead")
	probe("Campaign", err)
	_, err = w.grp.Join(ctx, "dead")
	probe("Join", err)
	_, err = w.ctr.Add(ctx, 1000000)
	probe("Counter.Add", err)
	_, err = w.cfg.CompareAndSet(ctx, soakCfg{"dead"}, w.lastCfg)
	probe("CompareAndSet", err)
	// A put on a dead session is either refused or uncertain; it is
	// recorded like any other.
	if !sk.skip["queue"] {
		w.opQueuePut(sk.q, w.q.Put, 1)
	}
	return w.connect()
}

// run is the worker's loop until the workload ends.
func (w *soakWorker) run() {
	sk := w.sk
	type op struct {
		recipe string
		weight int
		do     func()
	}
	var ops []op
	total := 0
	for _, o := range []op{
		{"lock", 4, w.opLock},
		{"rwlock", 3, w.opRWLock},
		{"semaphore", 3, w.opSemaphore},
		{"queue", 3, func() { w.opQueuePut(sk.q, w.q.Put, 1+w.r.IntN(2)) }},
		{"queue", 3, w.opQueueTake},
		{"ackqueue", 3, func() { w.opQueuePut(sk.aq, w.aq.Put, 1+w.r.IntN(2)) }},
		{"ackqueue", 3, w.opAckTake},
		{"election", 2, w.opElection},
		{"group", 1, w.opGroup},
		{"config", 2, w.opConfig},
		{"counter", 2, w.opCounter},
		{"barrier", 1, w.opBarrier},
	} {
		if !sk.skip[o.recipe] {
			ops = append(ops, o)
			total += o.weight
		}
	}
	if total == 0 {
		return
	}
	for !closed(sk.stop) && sk.ctx.Err() == nil {
		if closed(w.ws.s.Done()) {
			if err := w.afterExpiry(); err != nil {
				sk.failf("w%d: reconnecting after expiry: %v", w.id, err)
				return
			}
		}
		k := w.r.IntN(total)
		for _, o := range ops {
			if k < o.weight {
				o.do()
				break
			}
			k -= o.weight
		}
		w.think(30)
	}
}

// injector injects faults into the workers' proxies until the workload ends.
func (sk *soak) injector(ws []*soakWorker, r *rand.Rand, bg *sync.WaitGroup) {
	ops := []int32{zktest.OpCreate, zktest.OpCreate2, zktest.OpDelete, zktest.OpMulti, zktest.OpMulti,
		zktest.OpSetData, zktest.OpGetData, zktest.OpGetChildren2, zktest.OpExists}
	opName := map[int32]string{zktest.OpCreate: "create", zktest.OpCreate2: "create2", zktest.OpDelete: "delete",
		zktest.OpMulti: "multi", zktest.OpSetData: "setData", zktest.OpGetData: "getData",
		zktest.OpGetChildren2: "getChildren2", zktest.OpExists: "exists"}
	wait := func(d time.Duration) bool {
		tm := time.NewTimer(d)
		defer tm.Stop()
		select {
		case <-tm.C:
			return true
		case <-sk.stop:
			return false
		}
	}
	// At least one expiry of each kind per run, at a time drawn from the
	// seed in the first two thirds of the workload; more come at random.
	start := time.Now()
	forcedAt := time.Duration(r.Int64N(int64(sk.dur) * 2 / 3))
	holeAt := time.Duration(r.Int64N(int64(sk.dur) * 2 / 3))
	forcedDone, holeDone := false, false
	for wait(time.Duration(100+r.IntN(600)) * time.Millisecond) {
		w := ws[r.IntN(len(ws))]
		kind := r.IntN(100)
		switch el := time.Since(start); {
		case !holeDone && el >= holeAt:
			kind = 95
		case !forcedDone && el >= forcedAt:
			kind = 99
		}
		if w.blackholed.Load() {
			continue
		}
		switch {
		case kind < 30:
			w.p.CutAll()
			sk.count(sk.faults, "cut")
		case kind < 60:
			op := ops[r.IntN(len(ops))]
			fired := w.p.CutAfterRequest(op)
			sk.count(sk.faults, "cut-after-"+opName[op]+"(armed)")
			bg.Add(1)
			go func() {
				defer bg.Done()
				select {
				case <-fired:
					sk.count(sk.faults, "cut-after-request(fired)")
				case <-sk.stop:
				}
			}()
		case kind < 75:
			w.p.Delay(time.Duration(5+r.IntN(100)) * time.Millisecond)
			sk.count(sk.faults, "delay")
			wait(time.Duration(200+r.IntN(1000)) * time.Millisecond)
			w.p.Delay(0)
		case kind < 93:
			// Hold the reconnection after a cut, well within the time a
			// client rides out.
			w.p.Pause(true)
			w.p.CutAll()
			sk.count(sk.faults, "pause")
			wait(time.Duration(100+r.IntN(1000)) * time.Millisecond)
			w.p.Pause(false)
		case kind < 97:
			// A partition: the client gives its session up at 35% of the
			// timeout (Done closes); the server expires it later.
			holeDone = true
			cur := w.cur.Load()
			w.blackholed.Store(true)
			w.p.Blackhole(true)
			sk.count(sk.faults, "blackhole-expiry")
			bg.Add(1)
			go func() {
				defer bg.Done()
				select {
				case <-cur.s.Done():
				case <-sk.ctx.Done():
				}
				w.p.Blackhole(false)
				w.blackholed.Store(false)
			}()
		default:
			// The server expires the session behind the client's back.
			forcedDone = true
			cur := w.cur.Load()
			if closed(cur.s.Done()) {
				continue
			}
			creds, ok := w.p.Session(cur.s.ID())
			if !ok {
				sk.failf("proxy of w%d never saw session 0x%x", w.id, cur.s.ID())
				continue
			}
			cur.forced.Store(true)
			// Attaching to the session drops the client's connection, and
			// a client that reconnects at once takes the session back and
			// drops this one, again and again (seen in a 30m run, seed
			// 1795397397152837622: five attempts, all "reading closeSession
			// reply: EOF"). So the proxy holds the client's reconnection
			// meanwhile.
			w.p.Pause(true)
			// The client reconnecting at the same moment (after an earlier
			// cut) can still take the session back and drop this
			// connection: try again.
			// An attempt that closed the session may also lose its reply,
			// so ErrInvalidSession after a failed attempt is a success.
			var err error
			retried := false
			for range 5 {
				err = zktest.CloseSession(sk.srv.Addr(), creds.ID, creds.Passwd, 10*time.Second)
				if err == nil || errors.Is(err, zktest.ErrInvalidSession) {
					break
				}
				retried = true
			}
			w.p.Pause(false)
			switch {
			case err == nil, retried && errors.Is(err, zktest.ErrInvalidSession):
				sk.count(sk.faults, "forced-expiry")
			case errors.Is(err, zktest.ErrInvalidSession):
				sk.count(sk.faults, "forced-expiry(already gone)")
			default:
				sk.failf("expiring the session of w%d: %v", w.id, err)
			}
		}
	}
}

func TestSoak(t *testing.T) {
	srv := server(t)
	sk := &soak{
		t:      t,
		seed:   soakSeed(t),
		dur:    soakDuration(t),
		skip:   soakSkip(t),
		srv:    srv,
		root:   testRoot(t),
		stop:   make(chan struct{}),
		log:    slog.New(slog.DiscardHandler),
		cfgVer: map[runtime.Version]string{},
		ctrVal: map[int64]string{},
		ops:    map[string]int{},
		errs:   map[string]int{},
		faults: map[string]int{},
		owners: map[int64]string{},
	}
	t.Logf("soak seed %d, duration %v, skipping %v; reproduce with: %s", sk.seed, sk.dur, sk.skip, sk.reproduce())
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("soak FAILED with seed %d; reproduce (same schedule, not the same interleaving) with:\n\t%s", sk.seed, sk.reproduce())
		}
	})
	// The drain and the final checks take time in proportion to the load
	// (a 30m run left ~18000 items in 4500 buckets, and its drain ran out
	// of a fixed 3m: seed 1795399458622140873).
	ctx, cancel := context.WithTimeout(context.Background(), sk.dur+max(3*time.Minute, sk.dur))
	defer cancel()
	sk.ctx = ctx
	sk.lockX = newExclusion(sk, "lock", 1, false, true)
	sk.rwX = newExclusion(sk, "rwlock", 0, true, true)
	sk.semX = newExclusion(sk, "semaphore", soakLeases, false, false)
	sk.elX = newExclusion(sk, "election", 1, false, true)
	sk.q = newLedger("queue", false)
	sk.aq = newLedger("ackqueue", true)

	admin := connect(t, srv.Servers(), runtime.WithLogger(sk.log))
	sk.own(admin.ID(), "admin (the test's own checks and drain)")
	if _, err := admin.CreatePersistent(ctx, sk.root); err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.NewConfig(admin, sk.at("config"), runtime.JSONCodec[soakCfg]()).CompareAndSet(ctx, soakCfg{"init"}, runtime.NoVersion); err != nil {
		t.Fatal(err)
	}
	sk.cfgVer[0] = "init"

	workers := make([]*soakWorker, soakWorkers)
	for i := range workers {
		w := &soakWorker{id: i, sk: sk, p: zktest.NewProxy(t, srv.Addr()), r: rand.New(rand.NewPCG(sk.seed, uint64(i)))}
		if err := w.connect(); err != nil {
			t.Fatal(err)
		}
		workers[i] = w
	}

	began := time.Now()
	var wg, bg sync.WaitGroup
	for _, w := range workers {
		wg.Add(1)
		go func() { defer wg.Done(); w.run() }()
	}
	injDone := make(chan struct{})
	go func() {
		defer close(injDone)
		sk.injector(workers, rand.New(rand.NewPCG(sk.seed, 1000)), &bg)
	}()
	tm := time.NewTimer(sk.dur)
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
	close(sk.stop)
	<-injDone
	bg.Wait()
	for _, w := range workers {
		w.p.Delay(0)
		w.p.Pause(false)
		w.p.Blackhole(false)
	}
	wg.Wait()
	workload := time.Since(began)

	// Close every client, then make sure every session that ever went
	// through a proxy is gone on the server (one given up by its client
	// after a partition would otherwise live until its timeout).
	for _, w := range workers {
		w.ws.s.Close()
	}
	for _, w := range workers {
		for _, s := range w.p.Sessions() {
			err := zktest.CloseSession(srv.Addr(), s.ID, s.Passwd, 10*time.Second)
			if err != nil && !errors.Is(err, zktest.ErrInvalidSession) {
				t.Errorf("closing session 0x%x: %v", s.ID, err)
			}
		}
	}
	sk.scan(admin, false)
	if ms, err := runtime.NewGroup(admin, sk.at("group"), runtime.StringCodec()).Members(ctx); err != nil || len(ms) != 0 {
		sk.failf("group after every client closed: members %v (%v)", ms, err)
	}
	if st, err := runtime.NewElection(admin, sk.at("election"), runtime.StringCodec()).State(ctx); err != nil || st.Elected {
		sk.failf("election after every client closed: %+v (%v)", st, err)
	}

	// The drain runs on a session of its own, closed before the final scan:
	// a queue handle's last marker lingers for a moment after its last
	// take (deleted by the next operation, or by a timer), and only the
	// session's end settles when it is gone.
	drainer := connect(t, srv.Servers(), runtime.WithLogger(sk.log))
	sk.own(drainer.ID(), "drainer (the test's final drain)")
	sk.drain(drainer)
	drainer.Close()
	sk.finalChecks(admin)
	if err := runtime.NewBarrier(admin, sk.at("barrier")).Lower(ctx); err != nil {
		t.Errorf("lowering the barrier: %v", err)
	}
	sk.scan(admin, true)
	sk.summary(workers, workload)
	if !t.Failed() {
		deleteTree(t, admin, sk.root)
	}
}

// drain empties both queues through a client without faults, recording the
// takes like the workers'. A queue that cannot be drained is reported (with
// its tree) and left out of the final lost-item check.
func (sk *soak) drain(s *runtime.Session) {
	for _, l := range []*queueLedger{sk.q, sk.aq} {
		if sk.skip[l.name] {
			continue
		}
		sk.staleBuckets(s, l.name)
		var err error
		if l.ack {
			err = sk.drainAck(s)
		} else {
			err = sk.drainQueue(s)
		}
		if err != nil {
			sk.failf("draining %s: %v\n%s", l.name, err, dumpTree(s, sk.at(l.name).String()))
			l.mu.Lock()
			l.undrained = true
			l.mu.Unlock()
		}
	}
}

// staleBuckets reports an open (unsealed) bucket below the highest one: new
// consumers start at the lowest bucket and wait there for ever, since
// producers only put into the highest.
func (sk *soak) staleBuckets(s *runtime.Session, name string) {
	dir := sk.at(name).String()
	kids, _, err := s.Conn().Children(dir)
	if err != nil {
		return
	}
	var bs []string
	for _, k := range kids {
		if strings.HasPrefix(k, "b-") {
			bs = append(bs, k)
		}
	}
	slices.Sort(bs)
	for i, b := range bs[:max(len(bs)-1, 0)] {
		_, st, err := s.Conn().Get(dir + "/" + b)
		if err == nil && st.Version == 0 {
			sk.failf("%s: bucket %s is open (unsealed) below bucket %s, the highest of %d: consumers that start from the lowest bucket wait there for ever", name, b, bs[len(bs)-1], len(bs)-i)
		}
	}
}

func (sk *soak) drainQueue(s *runtime.Session) error {
	q := runtime.NewQueue(s, sk.at("queue"), runtime.StringCodec(), runtime.WithBucketSize(soakBucket))
	for {
		n, err := q.Len(sk.ctx)
		if err != nil || n == 0 {
			return err
		}
		ctx, cancel := context.WithTimeout(sk.ctx, 20*time.Second)
		items, err := q.TakeN(ctx, 100)
		cancel()
		if err != nil {
			return fmt.Errorf("%d items left: %w", n, err)
		}
		sk.q.mu.Lock()
		for _, id := range items {
			sk.q.took(sk, "drain", id)
		}
		sk.q.mu.Unlock()
	}
}

func (sk *soak) drainAck(s *runtime.Session) error {
	aq := runtime.NewAckQueue(s, sk.at("ackqueue"), runtime.StringCodec(), runtime.WithBucketSize(soakBucket))
	ws := &soakSession{s: s, worker: -1}
	for {
		n, err := aq.Len(sk.ctx)
		if err != nil || n == 0 {
			return err
		}
		ctx, cancel := context.WithTimeout(sk.ctx, 20*time.Second)
		ds, err := aq.TakeN(ctx, 100)
		if err != nil {
			cancel()
			return fmt.Errorf("%d items left: %w", n, err)
		}
		for _, d := range ds {
			sk.aq.delivered1(sk, ws, d.Value)
			if err := d.Ack(ctx); err != nil {
				cancel()
				return fmt.Errorf("Ack %s: %w", d.Node(), err)
			}
			sk.aq.settled(sk, ws, d.Value, true, "ok")
		}
		cancel()
	}
}

// finalChecks checks the end state of the queues, the counter and the
// config against the ledgers.
func (sk *soak) finalChecks(s *runtime.Session) {
	ctx := sk.ctx
	for _, l := range []*queueLedger{sk.q, sk.aq} {
		l.mu.Lock()
		if l.undrained {
			l.mu.Unlock()
			continue
		}
		lost, uncertainPuts := 0, 0
		var lostIDs []string
		for id, st := range l.put {
			got := l.taken[id]
			if l.ack {
				got = l.acked[id]
			}
			switch st {
			case "uncertain":
				uncertainPuts++
			case "failed":
				if got > 0 {
					sk.failf("%s: %q, whose put failed, was consumed", l.name, id)
				}
			case "ok":
				if got == 0 && !(l.ack && l.ackUnknown[id]) {
					lost++
					lostIDs = append(lostIDs, id)
				}
			case "pending":
				sk.failf("%s: %q: put never settled", l.name, id)
			}
		}
		slices.Sort(lostIDs)
		switch {
		case lost == 0:
		case !l.ack && lost <= l.budget:
			sk.t.Logf("%s: %d items lost to %d uncertain takes (allowed: at most once): %v", l.name, lost, l.budget, lostIDs)
		case !l.ack && lost <= l.budget+l.maybe:
			sk.failf("%s: %d items lost, more than the %d that uncertain takes may lose; %d more were removed by takes that timed out and returned ctx's error (Take's contract says nothing is removed then): %v",
				l.name, lost, l.budget, l.maybe, lostIDs)
		default:
			sk.failf("%s: %d items put successfully were never consumed (uncertain-take budget %d): %v", l.name, lost, l.budget, lostIDs)
		}
		l.mu.Unlock()
	}

	v, err := runtime.NewCounter(s, sk.at("counter")).Get(ctx)
	if err != nil {
		sk.t.Fatal(err)
	}
	sk.ctrMu.Lock()
	if v < sk.ctrOK || v > sk.ctrOK+sk.ctrUnk {
		sk.failf("counter = %d; successful Adds sum to %d, unknown ones to %d", v, sk.ctrOK, sk.ctrUnk)
	}
	sk.ctrMu.Unlock()

	cv, ver, err := runtime.NewConfig(s, sk.at("config"), runtime.JSONCodec[soakCfg]()).Get(ctx)
	if err != nil {
		sk.t.Fatal(err)
	}
	sk.cfgMu.Lock()
	top := runtime.Version(0)
	for k := range sk.cfgVer {
		top = max(top, k)
	}
	if ver < top {
		sk.failf("config at version %d, but version %d was seen", ver, top)
	}
	if prev, ok := sk.cfgVer[ver]; ok && prev != cv.ID {
		sk.failf("config holds %q at version %d, which held %q", cv.ID, ver, prev)
	}
	sk.cfgMu.Unlock()
}

// scan walks the test root. No ephemeral node may be left once every client
// is closed; persistent nodes must be the structure the recipes keep (and,
// once drained, no queue item).
func (sk *soak) scan(s *runtime.Session, final bool) {
	allowed := func(rel string) bool {
		parts := strings.Split(rel, "/")
		switch parts[0] {
		case "lock", "rwlock", "group":
			return len(parts) == 1
		case "sem":
			return len(parts) == 1 || len(parts) == 2 && (parts[1] == "locks" || parts[1] == "leases")
		case "election":
			return len(parts) == 1 || len(parts) == 2 && parts[1] == "epoch"
		case "config", "counter":
			return len(parts) == 1
		case "barrier":
			return len(parts) == 1 && !final
		case "queue", "ackqueue":
			switch {
			case len(parts) == 1:
				return true
			case len(parts) == 2:
				return parts[1] == "marks" || parts[1] == "claims" || parts[1] == "attempts" || strings.HasPrefix(parts[1], "b-")
			}
			if len(parts) == 3 && parts[1] == "attempts" {
				// An item's delivery count: kept while its item is queued
				// (delivered and released, or its consumer's session
				// ended), an orphan once the item is gone.
				b, item, ok := strings.Cut(parts[2], ".")
				if !ok {
					return false
				}
				exists, _, err := s.Conn().Exists(path.Join(sk.root, parts[0], b, item))
				return err == nil && exists
			}
			// items: allowed until drained (or when the drain failed,
			// which is reported already)
			l := sk.q
			if parts[0] == "ackqueue" {
				l = sk.aq
			}
			l.mu.Lock()
			undrained := l.undrained
			l.mu.Unlock()
			return len(parts) == 3 && strings.HasPrefix(parts[1], "b-") && (!final || undrained)
		}
		return false
	}
	var walk func(p string)
	walk = func(p string) {
		kids, _, err := s.Conn().Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return
		}
		if err != nil {
			sk.t.Fatalf("children %s: %v", p, err)
		}
		for _, k := range kids {
			c := path.Join(p, k)
			_, st, err := s.Conn().Get(c)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				sk.t.Fatalf("get %s: %v", c, err)
			}
			rel := strings.TrimPrefix(c, sk.root+"/")
			switch {
			case st.EphemeralOwner != 0:
				sk.failf("orphan ephemeral node %s (session 0x%x, %s) after every client closed", c, st.EphemeralOwner, sk.owner(st.EphemeralOwner))
			case !allowed(rel):
				sk.failf("unexpected persistent node %s (final=%v)", c, final)
			}
			walk(c)
		}
	}
	walk(sk.root)
}

func (sk *soak) summary(ws []*soakWorker, workload time.Duration) {
	sk.statMu.Lock()
	defer sk.statMu.Unlock()
	kv := func(m map[string]int) string {
		keys := make([]string, 0, len(m))
		total := 0
		for k, v := range m {
			keys = append(keys, k)
			total += v
		}
		slices.Sort(keys)
		var b strings.Builder
		fmt.Fprintf(&b, "%d [", total)
		for i, k := range keys {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s=%d", k, m[k])
		}
		b.WriteString("]")
		return b.String()
	}
	sessions := 0
	for _, w := range ws {
		sessions += w.gen
	}
	sk.q.mu.Lock()
	qs := fmt.Sprintf("queue: %d put, %d taken, uncertain-take budget %d", len(sk.q.put), len(sk.q.taken), sk.q.budget)
	sk.q.mu.Unlock()
	sk.aq.mu.Lock()
	aqs := fmt.Sprintf("ackqueue: %d put, %d deliveries, %d acked", len(sk.aq.put), sk.aq.delivered, len(sk.aq.acked))
	sk.aq.mu.Unlock()
	sk.t.Logf("soak summary: seed %d, workload %v, %d workers, %d sessions, %d violations", sk.seed, workload.Round(time.Millisecond), len(ws), sessions, sk.failures.Load())
	sk.t.Logf("soak ops %s", kv(sk.ops))
	sk.t.Logf("soak outcomes %s", kv(sk.errs))
	sk.t.Logf("soak faults %s", kv(sk.faults))
	sk.cfgMu.Lock()
	top := runtime.Version(0)
	for v := range sk.cfgVer {
		top = max(top, v)
	}
	sk.cfgMu.Unlock()
	sk.t.Logf("soak %s; %s; counter %d ok + %d unknown; config reached version %d; peaks: lock %d, rwlock %d, semaphore %d, election %d",
		qs, aqs, sk.ctrOK, sk.ctrUnk, top, sk.lockX.peak, sk.rwX.peak, sk.semX.peak, sk.elX.peak)
}

// deleteTree removes p and everything below it.
func deleteTree(t *testing.T, s *runtime.Session, p string) {
	kids, _, err := s.Conn().Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return
	}
	if err != nil {
		t.Errorf("children %s: %v", p, err)
		return
	}
	for _, k := range kids {
		deleteTree(t, s, path.Join(p, k))
	}
	if err := s.Conn().Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Errorf("delete %s: %v", p, err)
	}
}

// dumpTree describes the tree under p, for failure messages.
func dumpTree(s *runtime.Session, p string) string {
	var b strings.Builder
	var walk func(p, indent string)
	walk = func(p, indent string) {
		data, st, err := s.Conn().Get(p)
		if err != nil {
			fmt.Fprintf(&b, "%s%s: %v\n", indent, path.Base(p), err)
			return
		}
		kids, _, _ := s.Conn().Children(p)
		slices.Sort(kids)
		fmt.Fprintf(&b, "%s%s (version %d, %d children, ephemeral 0x%x, data %q)\n", indent, path.Base(p), st.Version, len(kids), st.EphemeralOwner, data)
		for _, k := range kids {
			walk(path.Join(p, k), indent+"  ")
		}
	}
	walk(p, "")
	return b.String()
}
