package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Producers and consumers of an at-most-once queue and of an at-least-once
// queue, spread over a 3-server ensemble: on each queue one producer and
// one consumer pinned to each server (a server list of that server alone,
// so they are cut off with it) and one consumer that may use any server.
// While items flow, the leader is cut off, the partition heals, then a
// follower is cut off with its clients, and it heals again. Each partition
// lasts until the clients pinned to the server cut off have lost their
// sessions; they then wait for their server and start new sessions.
//
// Every put and take is entered in a ledger. A put that returned nil must
// be consumed exactly once (at-most-once: taken once, unless a take whose
// session ended in flight, ErrTakeUncertain, may have removed it
// undelivered; at-least-once: acked once, unless an Ack's outcome is
// unknown); a put that failed with any other error than ErrPutUncertain must
// never be consumed; nothing is consumed that nobody put, nor taken twice
// from the at-most-once queue, nor acked twice, nor delivered to a consumer
// while another consumer whose session lives holds it. At the end, after a
// drain and once every session is closed, no item, claim or marker is left.
func TestPartitionQueues(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	e := zktest.StartEnsemble(t, 3, zktest.WithQuorumFaults())
	ctx := testCtx(t, 3*time.Minute)
	root := testRoot(t)
	const (
		phase   = 30 // items consumed before, during and after each partition
		backlog = 20 // items put and not yet consumed, per queue
		bucket  = 8  // small buckets: sealing and moving on happen during the faults
	)
	run := &queueRun{fleet: newFleet(t, ctx), progress: make(chan struct{}, 1<<16), stop: make(chan struct{})}
	cctx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	codec := runtime.StringCodec()
	qopt := runtime.WithBucketSize(bucket)

	var pwg, cwg sync.WaitGroup
	for _, ack := range []bool{false, true} {
		name := "queue"
		if ack {
			name = "ackqueue"
		}
		l := newItemLedger(t, name, ack, backlog, run.progress)
		run.ledgers = append(run.ledgers, l)
		p := runtime.At(root).Lit(name)
		for m := range e.Size() {
			pw := run.client(fmt.Sprintf("%s-p%d", name, m), e, m)
			pwg.Add(1)
			go func() {
				defer pwg.Done()
				produce(run, pw, l, func(s *runtime.Session) func(context.Context, string) error {
					if ack {
						return runtime.NewAckQueue(s, p, codec, qopt).Put
					}
					return runtime.NewQueue(s, p, codec, qopt).Put
				})
			}()
		}
		for m := -1; m < e.Size(); m++ {
			cw := run.client(fmt.Sprintf("%s-c%d", name, m), e, m)
			cwg.Add(1)
			go func() {
				defer cwg.Done()
				if ack {
					consumeAck(cctx, cw, l, func(s *runtime.Session) *runtime.AckQueue[string] { return runtime.NewAckQueue(s, p, codec, qopt) })
				} else {
					consume(cctx, cw, l, func(s *runtime.Session) *runtime.Queue[string] { return runtime.NewQueue(s, p, codec, qopt) })
				}
			}()
		}
	}

	consumed := 0
	wait := func(n int, when string) {
		t.Helper()
		for i := 0; i < n; i++ {
			select {
			case <-run.progress:
				consumed++
			case <-ctx.Done():
				t.Fatalf("%s: stalled after %d of %d items", when, i, n)
			}
		}
	}
	wait(phase, "before the partitions")
	prev := -1
	for _, side := range []string{"leader", "follower"} {
		leader, err := e.WaitQuorum(settleQuorum)
		if err != nil {
			t.Fatal(err)
		}
		x := leader
		if side == "follower" {
			// A follower other than the member cut off before.
			x = (leader + 1) % e.Size()
			if x == prev {
				x = (leader + 2) % e.Size()
			}
		}
		prev = x
		pinned := run.pinnedTo(x)
		newLeader := isolate(t, e, x)
		t.Logf("%s %d cut off with %d pinned sessions; member %d leads the majority", side, x, len(pinned), newLeader)
		wait(phase, fmt.Sprintf("member %d cut off", x))
		run.awaitEnd(pinned, fmt.Sprintf("pinned to member %d, cut off", x))
		healed := heal(t, e)
		t.Logf("healed; member %d leads", healed)
		wait(phase, fmt.Sprintf("after member %d rejoined", x))
	}

	// Stop producing, then consuming; close every session (claims and
	// markers are ephemeral) and drain what is left on a session of its own.
	close(run.stop)
	pwg.Wait()
	stopConsumers()
	cwg.Wait()
	run.closeAll()
	drain := connect(t, e.Servers(), runtime.WithSessionTimeout(survivorTimeout))
	for _, l := range run.ledgers {
		p := runtime.At(root).Lit(l.name)
		if err := l.drain(ctx, drain, p, codec, qopt); err != nil {
			dir := root + "/" + l.name
			for _, sub := range []string{"claims", "marks"} {
				for _, k := range childrenOf(t, drain, dir+"/"+sub) {
					_, st, err := drain.Conn().Get(dir + "/" + sub + "/" + k)
					if err == nil {
						t.Logf("%s/%s/%s: owner 0x%x (%s), ctime %v", dir, sub, k, st.EphemeralOwner, run.owner(st.EphemeralOwner), time.UnixMilli(st.Ctime).Format("15:04:05.000"))
					}
				}
			}
			t.Logf("drain session 0x%x: %s", drain.ID(), runtime.ConsumerState(runtime.NewAckQueue(drain, p, codec, qopt)))
			for _, b := range childrenOf(t, drain, dir) {
				if strings.HasPrefix(b, "b-") {
					_, st, _ := drain.Conn().Get(dir + "/" + b)
					t.Logf("%s/%s (version %d): %v", dir, b, st.Version, childrenOf(t, drain, dir+"/"+b))
				}
			}
			t.Fatalf("%s: drain: %v", l.name, err)
		}
	}
	drainID := drain.ID()
	drain.Close()
	owner := func(id int64) string {
		if id == drainID {
			return "the drain's"
		}
		return run.owner(id)
	}
	for _, l := range run.ledgers {
		l.final()
	}
	t.Logf("%d items consumed during the run; %d sessions opened, %d of them expired", consumed, run.opened(), run.expired())
	if t.Failed() {
		return
	}
	check := connect(t, e.Servers())
	for _, l := range run.ledgers {
		dir := root + "/" + l.name
		awaitExpired(t, ctx, check, run.fleet, e.Servers(), 2*minorityTimeout, dir+"/marks", dir+"/claims")
		requireQueueEmpty(t, check, dir, owner)
	}
}

// requireQueueEmpty fails the test unless the queue at dir holds only its
// persistent directories (buckets, marks, claims, attempts), all empty. owner names
// the session that owns a node left behind.
func requireQueueEmpty(t *testing.T, s *runtime.Session, dir string, owner func(int64) string) {
	t.Helper()
	for _, k := range childrenOf(t, s, dir) {
		if k != "marks" && k != "claims" && k != "attempts" && !strings.HasPrefix(k, "b-") {
			t.Errorf("unexpected node %s/%s", dir, k)
			continue
		}
		for _, kid := range childrenOf(t, s, dir+"/"+k) {
			p := dir + "/" + k + "/" + kid
			_, st, err := s.Conn().Get(p)
			switch {
			case err != nil:
				t.Errorf("left behind: %s (%v)", p, err)
			case st.EphemeralOwner != 0:
				t.Errorf("left behind: %s, ephemeral, owned by session 0x%x: %s", p, st.EphemeralOwner, owner(st.EphemeralOwner))
			default:
				t.Errorf("left behind: %s", p)
			}
		}
	}
}

// queueRun is the shared state of the queue workers.
type queueRun struct {
	*fleet
	ledgers  []*itemLedger
	progress chan struct{} // one per item consumed for the first time
	stop     chan struct{} // closed: producers stop
}

func produce(run *queueRun, w *fleetClient, l *itemLedger, newPut func(*runtime.Session) func(context.Context, string) error) {
	ctx := run.ctx
	var s *runtime.Session
	var put func(context.Context, string) error
	for k := 0; ; k++ {
		select {
		case l.slots <- struct{}{}:
		case <-run.stop:
			return
		}
		if cur := w.session(ctx); cur == nil {
			return
		} else if cur != s {
			s, put = cur, newPut(cur)
		}
		item := fmt.Sprintf("%s.%d-%04d", w.name, w.generation(), k)
		l.putting(item)
		l.putDone(item, put(ctx, item))
	}
}

func consume(ctx context.Context, w *fleetClient, l *itemLedger, newQueue func(*runtime.Session) *runtime.Queue[string]) {
	var s *runtime.Session
	var q *runtime.Queue[string]
	for ctx.Err() == nil {
		cur := w.session(ctx)
		if cur == nil {
			return
		}
		if cur != s {
			s, q = cur, newQueue(cur)
		}
		v, err := q.Take(ctx)
		if v != "" { // taken, even if an error came with it
			l.took(w.name, v)
		}
		l.takeErr(err)
	}
}

func consumeAck(ctx context.Context, w *fleetClient, l *itemLedger, newQueue func(*runtime.Session) *runtime.AckQueue[string]) {
	var s *runtime.Session
	var q *runtime.AckQueue[string]
	for ctx.Err() == nil {
		cur := w.session(ctx)
		if cur == nil {
			return
		}
		if cur != s {
			s, q = cur, newQueue(cur)
		}
		d, err := q.Take(ctx)
		if d != nil {
			l.delivered(w.name, s, d.Value)
			// Acked at once, on the run's context: a stopping consumer
			// finishes what it holds.
			l.settled(s, d.Value, d.Ack(w.f.ctx))
		}
		l.takeErr(err)
	}
}

// itemLedger records every put and consumption of one queue.
type itemLedger struct {
	t        *testing.T
	name     string
	ack      bool
	slots    chan struct{} // one per item whose put is pending or ok and not yet consumed
	progress chan<- struct{}

	mu         sync.Mutex
	put        map[string]string // item → pending, ok, uncertain, failed
	taken      map[string]int    // at-most-once: takes; at-least-once: deliveries
	acked      map[string]int
	ackUnknown map[string]bool             // an Ack whose outcome is unknown
	claims     map[string]*runtime.Session // live deliveries, by item
	budget     int                         // items that uncertain takes may have removed undelivered
	maybe      int                         // items that takes ended by ctx say they may have removed
	errs       map[string]int              // error classes seen
}

func newItemLedger(t *testing.T, name string, ack bool, backlog int, progress chan<- struct{}) *itemLedger {
	return &itemLedger{t: t, name: name, ack: ack, slots: make(chan struct{}, backlog), progress: progress,
		put: map[string]string{}, taken: map[string]int{}, acked: map[string]int{},
		ackUnknown: map[string]bool{}, claims: map[string]*runtime.Session{}, errs: map[string]int{}}
}

func (l *itemLedger) putting(item string) {
	l.mu.Lock()
	l.put[item] = "pending"
	l.mu.Unlock()
}

// putDone settles a put: nil is ok, ErrPutUncertain uncertain, anything
// else a put that did not happen.
func (l *itemLedger) putDone(item string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.put[item] = "ok"
		return
	case errors.Is(err, runtime.ErrPutUncertain):
		// It may have been put, and even consumed already.
		l.put[item] = "uncertain"
	default:
		l.put[item] = "failed"
		l.freeSlot()
		if l.taken[item] > 0 {
			l.t.Errorf("%s: %q consumed while its put was in flight, and the put then failed with an error that says it did not happen: %v", l.name, item, err)
		}
	}
	l.errs["put: "+errClass(err)]++
}

func (l *itemLedger) freeSlot() {
	select {
	case <-l.slots:
	default:
	}
}

// first notes the first consumption of an item; l.mu is held.
func (l *itemLedger) first() {
	l.freeSlot()
	l.progress <- struct{}{}
}

// check fails the test if item may not be consumed; l.mu is held.
func (l *itemLedger) check(who, item string) {
	switch st, ok := l.put[item]; {
	case !ok:
		l.t.Errorf("%s: %s got %q, which nobody put", l.name, who, item)
	case st == "failed":
		l.t.Errorf("%s: %s got %q, whose put failed with an error that says it did not happen", l.name, who, item)
	}
}

// took records an at-most-once take.
func (l *itemLedger) took(who, item string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.check(who, item)
	l.taken[item]++
	if n := l.taken[item]; n > 1 {
		l.t.Errorf("%s: %q taken %d times (at-most-once)", l.name, item, n)
	} else {
		l.first()
	}
}

func (l *itemLedger) takeErr(err error) {
	if err == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c := errClass(err)
	l.errs["take: "+c]++
	switch {
	case c == "uncertain":
		l.budget++
	case c == "timeout" && strings.Contains(err.Error(), "may have been removed"):
		l.maybe++
	case c == "unexpected":
		l.t.Errorf("%s: Take: unexpected error: %v", l.name, err)
	}
}

// delivered records an at-least-once delivery to a consumer on s.
func (l *itemLedger) delivered(who string, s *runtime.Session, item string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.check(who, item)
	l.taken[item]++
	if l.acked[item] > 0 {
		l.t.Errorf("%s: %q delivered to %s after it was acked", l.name, item, who)
	}
	if o := l.claims[item]; o != nil && o != s && o.Err() == nil {
		l.t.Errorf("%s: %q delivered to %s while a consumer whose session is alive holds it", l.name, item, who)
	}
	l.claims[item] = s
}

// settled records the Ack of an at-least-once delivery.
func (l *itemLedger) settled(s *runtime.Session, item string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.claims[item] == s {
		delete(l.claims, item)
	}
	c := errClass(err)
	if errors.Is(err, runtime.ErrClaimLost) {
		c = "lost" // the contract: the Ack changed nothing
	}
	switch c {
	case "ok":
		l.acked[item]++
		if n := l.acked[item]; n > 1 {
			l.t.Errorf("%s: %q acked %d times", l.name, item, n)
		} else {
			l.first()
		}
		return
	case "lost":
		// The claim was gone: the item is delivered again.
	default:
		l.ackUnknown[item] = true
	}
	l.errs["ack: "+c]++
}

// drain consumes what is left in the queue at p on session s, entering it
// in the ledger. Claims of closed sessions are gone, so every item left can
// be taken.
func (l *itemLedger) drain(ctx context.Context, s *runtime.Session, p runtime.Path, codec runtime.Codec[string], opt runtime.QueueOption) error {
	q := runtime.NewQueue(s, p, codec, opt)
	aq := runtime.NewAckQueue(s, p, codec, opt)
	for {
		n, err := q.Len(ctx)
		if err != nil || n == 0 {
			return err
		}
		tctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		if !l.ack {
			items, err := q.TakeN(tctx, 10)
			cancel()
			for _, it := range items {
				l.took("drain", it)
			}
			if err != nil {
				return fmt.Errorf("%d items left: %w", n, err)
			}
			continue
		}
		ds, err := aq.TakeN(tctx, 10)
		for _, d := range ds {
			l.delivered("drain", s, d.Value)
			l.settled(s, d.Value, d.Ack(tctx))
		}
		cancel()
		if err != nil {
			return fmt.Errorf("%d items left: %w", n, err)
		}
	}
}

// final checks the ledger once everything is consumed.
func (l *itemLedger) final() {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lost []string
	count := map[string]int{}
	for item, st := range l.put {
		count[st]++
		got := l.taken[item]
		if l.ack {
			got = l.acked[item]
		}
		switch st {
		case "pending":
			l.t.Errorf("%s: %q: put never settled", l.name, item)
		case "failed":
			if l.taken[item] > 0 {
				l.t.Errorf("%s: %q, whose put failed, was consumed", l.name, item)
			}
		case "ok":
			if got == 0 && !(l.ack && l.ackUnknown[item]) {
				lost = append(lost, item)
			}
		}
	}
	slices.Sort(lost)
	switch {
	case len(lost) == 0:
	case !l.ack && len(lost) <= l.budget:
		l.t.Logf("%s: %d items lost to %d uncertain takes (at-most-once allows it): %v", l.name, len(lost), l.budget, lost)
	case !l.ack && len(lost) <= l.budget+l.maybe:
		l.t.Errorf("%s: %d items lost, more than the %d that uncertain takes may lose; %d more by takes that ended with ctx: %v", l.name, len(lost), l.budget, l.maybe, lost)
	default:
		l.t.Errorf("%s: %d items put successfully were never consumed (uncertain-take budget %d): %v", l.name, len(lost), l.budget, lost)
	}
	redelivered := 0
	for _, n := range l.taken {
		if n > 1 {
			redelivered += n - 1
		}
	}
	t := l.t
	t.Logf("%s: puts %v; %d redeliveries; errors %v", l.name, count, redelivered, l.errs)
}

// exactlyOnce fails the test unless every put succeeded and every item was
// consumed exactly once, with no operation of uncertain outcome: what a run
// whose sessions all survive must give.
func (l *itemLedger) exactlyOnce() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for item, st := range l.put {
		if st != "ok" {
			l.t.Errorf("%s: put of %q: %s", l.name, item, st)
		}
		if n := l.taken[item]; n != 1 {
			l.t.Errorf("%s: %q delivered %d times", l.name, item, n)
		}
		if l.ack && l.acked[item] != 1 {
			l.t.Errorf("%s: %q acked %d times", l.name, item, l.acked[item])
		}
	}
	if l.budget > 0 || l.maybe > 0 || len(l.ackUnknown) > 0 {
		l.t.Errorf("%s: %d uncertain takes, %d takes that may have removed items, %d acks of unknown outcome", l.name, l.budget, l.maybe, len(l.ackUnknown))
	}
}
