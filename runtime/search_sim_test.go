package runtime_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// The workloads of the search (search_driver_test.go): one per recipe
// kind, each with the contract it checks in its comment. Sizes are a
// run's before shrinking: procs processes, ops operations each.
var searchWorkloads = []workload{
	{name: "queue-fifo", procs: 4, ops: 30, minProcs: 2, rate: 0.03, run: func(r *searchRun) { queueSearch(r, "fifo", false) }},
	{name: "queue-priority", procs: 4, ops: 30, minProcs: 2, rate: 0.03, run: func(r *searchRun) { queueSearch(r, "priority", false) }},
	{name: "queue-delay", procs: 4, ops: 30, minProcs: 2, rate: 0.03, run: func(r *searchRun) { queueSearch(r, "delay", false) }},
	{name: "ackqueue-fifo", procs: 4, ops: 30, minProcs: 2, rate: 0.03, run: func(r *searchRun) { queueSearch(r, "fifo", true) }},
	{name: "ackqueue-priority", procs: 4, ops: 30, minProcs: 2, rate: 0.03, run: func(r *searchRun) { queueSearch(r, "priority", true) }},
	{name: "ackqueue-delay", procs: 4, ops: 30, minProcs: 2, rate: 0.03, run: func(r *searchRun) { queueSearch(r, "delay", true) }},
	{name: "lock", procs: 4, ops: 8, minProcs: 1, rate: 0.03, run: func(r *searchRun) { tenureSearch(r, "lock", false) }},
	{name: "lock-kazoo", procs: 4, ops: 8, minProcs: 1, rate: 0.03, run: func(r *searchRun) { tenureSearch(r, "lock-kazoo", false) }},
	{name: "semaphore", procs: 4, ops: 8, minProcs: 1, rate: 0.03, run: func(r *searchRun) { tenureSearch(r, "semaphore", false) }},
	{name: "election", procs: 4, ops: 8, minProcs: 1, rate: 0.03, run: func(r *searchRun) { tenureSearch(r, "election", false) }},
	{name: "rwlock", procs: 4, ops: 8, minProcs: 1, rate: 0.03, run: func(r *searchRun) { tenureSearch(r, "rwlock", false) }},
	{name: "counter", procs: 3, ops: 20, minProcs: 1, rate: 0.03, run: counterSearch},
	{name: "partitioner", procs: 3, ops: 4, minProcs: 1, rate: 0.02, run: partitionerSearch},
	{name: "ttllease", procs: 4, ops: 5, minProcs: 1, rate: 0.03, run: ttlLeaseSearch},
	{name: "twopc", procs: 3, ops: 4, minProcs: 3, rate: 0.02, run: twoPCSearch},
	{name: "supervise", procs: 3, ops: 30, minProcs: 1, rate: 0.03, run: superviseSearch},
	{name: "fenced-reap", procs: 3, ops: 10, minProcs: 1, rate: 0.03, run: fencedReapSearch},
	// An operator deletes recipe nodes by hand under live sessions.
	{name: "reap-lock", procs: 4, ops: 8, minProcs: 1, rate: 0.03, run: func(r *searchRun) { tenureSearch(r, "lock", true) }},
	{name: "reap-semaphore", procs: 4, ops: 8, minProcs: 1, rate: 0.03, run: func(r *searchRun) { tenureSearch(r, "semaphore", true) }},
	{name: "reap-election", procs: 4, ops: 8, minProcs: 1, rate: 0.03, run: func(r *searchRun) { tenureSearch(r, "election", true) }},
	{name: "reap-rwlock", procs: 4, ops: 8, minProcs: 1, rate: 0.03, run: func(r *searchRun) { tenureSearch(r, "rwlock", true) }},
	{name: "reap-queue", procs: 4, ops: 30, minProcs: 2, rate: 0.03, reap: true, run: func(r *searchRun) { queueSearch(r, "fifo", false) }},
	{name: "reap-ackqueue", procs: 4, ops: 30, minProcs: 2, rate: 0.03, reap: true, run: func(r *searchRun) { queueSearch(r, "fifo", true) }},
	{name: "reap-group", procs: 4, ops: 5, minProcs: 1, rate: 0.03, reap: true, run: groupSearch},
	{name: "reap-partitioner", procs: 3, ops: 4, minProcs: 1, rate: 0.02, reap: true, run: partitionerSearch},
	// On a 3-server ensemble with lagging followers, and servers cut off
	// by the chaos (their clients move to another).
	{name: "ensemble-lock", procs: 4, ops: 8, minProcs: 1, rate: 0.03, ensemble: 3, run: func(r *searchRun) { tenureSearch(r, "lock", false) }},
	{name: "ensemble-election", procs: 4, ops: 8, minProcs: 1, rate: 0.03, ensemble: 3, run: func(r *searchRun) { tenureSearch(r, "election", false) }},
	{name: "ensemble-queue", procs: 4, ops: 30, minProcs: 2, rate: 0.03, ensemble: 3, run: func(r *searchRun) { queueSearch(r, "fifo", false) }},
	{name: "ensemble-ackqueue", procs: 4, ops: 30, minProcs: 2, rate: 0.03, ensemble: 3, run: func(r *searchRun) { queueSearch(r, "fifo", true) }},
	{name: "ensemble-partitioner", procs: 3, ops: 4, minProcs: 1, rate: 0.02, ensemble: 3, run: partitionerSearch},
	// A holder that goes quiet on the minority side of a partition: cut
	// off with its follower, it must be told it lost before a waiter on
	// the majority side holds (docs/sessions.md, the session clock).
	{name: "ensemble-lock-minority", procs: 3, ops: 4, minProcs: 2, rate: 0.01, ensemble: 3, hold: 8 * time.Second,
		faults: []string{"minority"}, run: func(r *searchRun) { tenureSearch(r, "lock", false) }},
	{name: "ensemble-election-minority", procs: 3, ops: 4, minProcs: 2, rate: 0.01, ensemble: 3, hold: 8 * time.Second,
		faults: []string{"minority"}, run: func(r *searchRun) { tenureSearch(r, "election", false) }},
}

// The queue workloads: producers put, consumers take while they do, under
// random faults on virtual time; then one consumer drains what is left.
// Checked on what the clients saw, not on how the queue works:
//
//   - at-most-once (Queue): no item is delivered twice; an item whose Put
//     returned nil is delivered unless a Take reported ErrTakeUncertain
//     (the loss the contract allows, one per uncertain take); nothing is
//     delivered that was not put;
//   - at-least-once (AckQueue): every item whose Put returned nil is acked;
//     no item is acked twice; nothing is delivered that was not put;
//   - delay queues: nothing is delivered before its due time.

// queueVariant puts and takes on one kind of queue: put(item, due) and
// take, which returns the item, its Delivery (at-least-once) or nil, and
// Take's error.
type queueVariant struct {
	put  func(ctx context.Context, s *runtime.Session, item string, due time.Time) error
	take func(ctx context.Context, s *runtime.Session) (string, *runtime.Delivery[string], error)
}

func newQueueVariant(layout string, ack bool) queueVariant {
	at, codec := runtime.At("/q"), runtime.StringCodec()
	prio := func(item string) runtime.Priority { return runtime.Priority(len(item) % 3) }
	one := func(d *runtime.Delivery[string], err error) (string, *runtime.Delivery[string], error) {
		if d == nil {
			return "", nil, err
		}
		return d.Value, d, err
	}
	switch {
	case layout == "priority" && ack:
		return queueVariant{
			func(ctx context.Context, s *runtime.Session, item string, _ time.Time) error {
				return runtime.NewAckPriorityQueue(s, at, codec, 3).Put(ctx, prio(item), item)
			},
			func(ctx context.Context, s *runtime.Session) (string, *runtime.Delivery[string], error) {
				return one(runtime.NewAckPriorityQueue(s, at, codec, 3).Take(ctx))
			}}
	case layout == "priority":
		return queueVariant{
			func(ctx context.Context, s *runtime.Session, item string, _ time.Time) error {
				return runtime.NewPriorityQueue(s, at, codec, 3).Put(ctx, prio(item), item)
			},
			func(ctx context.Context, s *runtime.Session) (string, *runtime.Delivery[string], error) {
				v, err := runtime.NewPriorityQueue(s, at, codec, 3).Take(ctx)
				return v, nil, err
			}}
	case layout == "delay" && ack:
		return queueVariant{
			func(ctx context.Context, s *runtime.Session, item string, due time.Time) error {
				return runtime.NewAckDelayQueue(s, at, codec).Put(ctx, item, due)
			},
			func(ctx context.Context, s *runtime.Session) (string, *runtime.Delivery[string], error) {
				return one(runtime.NewAckDelayQueue(s, at, codec).Take(ctx))
			}}
	case layout == "delay":
		return queueVariant{
			func(ctx context.Context, s *runtime.Session, item string, due time.Time) error {
				return runtime.NewDelayQueue(s, at, codec).Put(ctx, item, due)
			},
			func(ctx context.Context, s *runtime.Session) (string, *runtime.Delivery[string], error) {
				v, err := runtime.NewDelayQueue(s, at, codec).Take(ctx)
				return v, nil, err
			}}
	case ack:
		return queueVariant{
			func(ctx context.Context, s *runtime.Session, item string, _ time.Time) error {
				return runtime.NewAckQueue(s, at, codec).Put(ctx, item)
			},
			func(ctx context.Context, s *runtime.Session) (string, *runtime.Delivery[string], error) {
				return one(runtime.NewAckQueue(s, at, codec).Take(ctx))
			}}
	default:
		return queueVariant{
			func(ctx context.Context, s *runtime.Session, item string, _ time.Time) error {
				return runtime.NewQueue(s, at, codec).Put(ctx, item)
			},
			func(ctx context.Context, s *runtime.Session) (string, *runtime.Delivery[string], error) {
				v, err := runtime.NewQueue(s, at, codec).Take(ctx)
				return v, nil, err
			}}
	}
}

// mostAtOnce returns the most spans on at one moment, and that moment:
// spans overlap most at one of their starts.
func mostAtOnce(spans []tenureSpan) (most int, at time.Time) {
	for _, a := range spans {
		on := 0
		for _, b := range spans {
			if !b.start.After(a.start) && b.end.After(a.start) {
				on++
			}
		}
		if on > most {
			most, at = on, a.start
		}
	}
	return most, at
}

func queueSearch(r *searchRun, layout string, ack bool) {
	q := newQueueVariant(layout, ack)
	r.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	// A queue's markers are its own bookkeeping (docs/queues.md): the
	// operator frees claims, and leaves the markers alone.
	stopOperator := r.reaper("/q", "/q/marks")
	producers := max(1, r.Config.Procs/2)
	consumers, items := max(1, r.Config.Procs-producers), r.Config.Ops
	var mu sync.Mutex
	put := map[string]bool{}          // Put returned nil
	uncertainPut := map[string]bool{} // Put returned ErrPutUncertain
	delivered := map[string]int{}
	acked := map[string]int{}
	ackUnknown := map[string]bool{} // Ack's outcome unknown: consumed, or delivered again
	due := map[string]time.Time{}   // a delay queue's items' due times
	var early []string              // delivered before due
	uncertainTakes := 0
	take := func(who int, s *runtime.Session, tctx context.Context) {
		v, d, err := q.take(tctx, s)
		now := time.Now()
		if v == "" {
			if err != nil {
				r.Event(who, "take: %v", err)
			}
			if errors.Is(err, runtime.ErrTakeUncertain) {
				mu.Lock()
				uncertainTakes++
				mu.Unlock()
			}
			return
		}
		r.Event(who, "took %s (err %v)", v, err)
		var aerr error
		if d != nil {
			aerr = d.Ack(ctx)
			r.Event(who, "ack %s: %v", v, aerr)
		}
		mu.Lock()
		defer mu.Unlock()
		delivered[v]++
		if at, ok := due[v]; ok && now.Before(at) {
			early = append(early, fmt.Sprintf("%s at %v, due %v", v, now, at))
		}
		if errors.Is(err, runtime.ErrTakeUncertain) {
			uncertainTakes++
		}
		switch {
		case d == nil:
		case aerr == nil:
			acked[v]++
		case !errors.Is(aerr, runtime.ErrClaimLost):
			ackUnknown[v] = true
		}
	}

	// Under faults: producers put, consumers take while they do.
	var wg sync.WaitGroup
	var done stopLine
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := r.Session(p)
			for i := 0; i < items; {
				s, err := w.Get(ctx)
				if err != nil {
					continue
				}
				item := fmt.Sprintf("p%d-%02d", p, i)
				at := time.Now().Add(time.Duration(i%4) * 500 * time.Millisecond)
				mu.Lock()
				if layout == "delay" {
					due[item] = at
				}
				mu.Unlock()
				err = q.put(ctx, s, item, at)
				r.Event(p, "put %s: %v", item, err)
				mu.Lock()
				switch {
				case err == nil:
					put[item] = true
					i++
				case errors.Is(err, runtime.ErrPutUncertain):
					uncertainPut[item] = true
					i++ // it may be in: put the next one
				}
				mu.Unlock()
			}
		}()
	}
	var cwg sync.WaitGroup
	for c := range consumers {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			w := r.Session(producers + c)
			for !done.stopped() {
				s, err := w.Get(ctx)
				if err != nil {
					continue
				}
				tctx, tcancel := context.WithTimeout(ctx, time.Second)
				take(producers+c, s, tctx)
				tcancel()
			}
		}()
	}
	wg.Wait()
	done.stop()
	cwg.Wait()
	stopOperator()

	// Quiet: no more faults; one consumer drains what is left.
	r.Calm()
	r.Quiet("/q", 30*time.Second)
	r.CloseSessions() // the workers end: their claims with them
	drain := r.Session(100)
	for {
		s, err := drain.Get(ctx)
		if err != nil {
			r.Fatalf("the drain cannot connect without faults: %v", err)
		}
		mu.Lock()
		n := 0
		for _, k := range delivered {
			n += k
		}
		mu.Unlock()
		tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
		take(producers+consumers, s, tctx)
		tcancel()
		mu.Lock()
		m := 0
		for _, k := range delivered {
			m += k
		}
		mu.Unlock()
		if m == n {
			break // nothing left within 10 virtual seconds
		}
	}
	r.Finish("/q", 0, queueDurable...)

	mu.Lock()
	defer mu.Unlock()
	for _, e := range early {
		r.Violate("never before its due time", "%s", e)
	}
	for item, n := range delivered {
		if !put[item] && !uncertainPut[item] {
			r.Violate("nothing delivered that was not put", "%s delivered but never put", item)
		}
		if !ack && n > 1 {
			r.Violate("at-most-once: never twice", "%s delivered %d times", item, n)
		}
	}
	lost := 0
	for item := range put {
		switch {
		case ack && acked[item] > 1:
			r.Violate("at-least-once: acked once", "%s acked %d times", item, acked[item])
		case ack && acked[item] == 0 && !ackUnknown[item]:
			r.Violate("at-least-once: never lost", "%s put and never acked (delivered %d times)", item, delivered[item])
		case !ack && delivered[item] == 0:
			lost++
		}
	}
	if lost > uncertainTakes {
		r.Violate("at-most-once: lost only by an uncertain take", "%d items put and never delivered, with %d uncertain takes", lost, uncertainTakes)
	}
	r.Logf("%d put (%d uncertain), %d delivered, %d acked, %d lost with %d uncertain takes",
		len(put), len(uncertainPut), len(delivered), len(acked), lost, uncertainTakes)
}

// queueDurable is what a queue keeps after its processes end: its
// directories (a priority level's too: its buckets, and its claims
// directory, made for a chunk claim that then found an item gone, so that
// the container never had a child for the server to reap it after) and the
// items nobody took (none, once drained).
var queueDurable = []string{"/q", "/q/*", "/q/p-*/*"}

// The tenure workloads: contenders for a tenure under random faults on
// virtual time. Checked on what they saw: at most max tenures are on at
// any moment — a tenure runs from its grant until its holder stops acting
// on it: it gives it up, is told it is lost, or its process crashes — and,
// for elections, that epochs strictly grow from one leadership to the
// next; locks of both layouts, a semaphore of 2 leases, an election, and
// the write and read sides of a read/write lock (writers alone; readers
// with readers only). A contender crashes now and then while it holds (its
// process stops; its session is cut off from the server and expires, and
// the process starts again on a new session): the others must go on.

// tenureSpan is one tenure as its holder saw it.
type tenureSpan struct {
	who        int
	write      bool  // exclusive (a lock's, a leadership's, a writer's)
	epoch      int64 // elections
	token      int64 // locks: the fencing token
	start, end time.Time
}

// byStart orders tenures by their start. Tenures of one virtual instant
// have no order the record can tell (a tenure granted, revoked and
// succeeded within an instant): they are taken in token (or epoch) order,
// so only equal tokens among them are reported.
func byStart(a, b tenureSpan) int {
	if c := a.start.Compare(b.start); c != 0 {
		return c
	}
	if c := cmp.Compare(a.token, b.token); c != 0 {
		return c
	}
	return cmp.Compare(a.epoch, b.epoch)
}

// tenure takes one tenure of kind on s for contender i; it returns the
// tenure's end signal, its release (under the context it is given: a
// release whose context ends before the server confirmed it must still
// leave nothing behind), and its span's fields.
func takeTenure(ctx context.Context, s *runtime.Session, kind string, i int) (lost <-chan struct{}, release func(context.Context) error, sp tenureSpan, err error) {
	sp.who, sp.write = i, true
	switch kind {
	case "lock", "lock-kazoo":
		var opts []runtime.LockOption
		if kind == "lock-kazoo" {
			opts = append(opts, runtime.WithLayout(runtime.LayoutKazoo))
		}
		l := runtime.NewLock(s, runtime.At("/t/lock"), opts...)
		if err := l.Lock(ctx); err != nil {
			return nil, nil, sp, err
		}
		sp.token = l.Token()
		return l.Lost(), l.Unlock, sp, nil
	case "semaphore":
		le, err := runtime.NewSemaphore(s, runtime.At("/t/sem"), 2).Acquire(ctx)
		if err != nil {
			return nil, nil, sp, err
		}
		sp.write = false
		return le.Lost(), le.Release, sp, nil
	case "election":
		l, err := runtime.NewElection(s, runtime.At("/t/elect"), runtime.StringCodec()).Campaign(ctx, fmt.Sprint(i))
		if err != nil {
			return nil, nil, sp, err
		}
		sp.epoch = l.Epoch()
		return l.Lost(), l.Resign, sp, nil
	default: // rwlock: even contenders write, odd ones read
		rw := runtime.NewRWLock(s, runtime.At("/t/rw"))
		h := rw.Read()
		if i%2 == 0 {
			h = rw.Write()
		}
		if err := h.Lock(ctx); err != nil {
			return nil, nil, sp, err
		}
		sp.write = i%2 == 0
		return h.Lost(), h.Unlock, sp, nil
	}
}

// reaper starts the operator on root if the workload reaps (workload.reap),
// sparing the nodes under the paths in spare; the returned stop ends it
// (a no-op if not).
func (r *searchRun) reaper(root string, spare ...string) (stop func()) {
	if !r.reap {
		return func() {}
	}
	return r.operator(root, spare...)
}

// operator deletes, by hand, a random ephemeral node under root every 0.2
// to 1.5 s until the returned stop is called: a recipe's node removed
// under its live session, as an operator cleaning up (or zkgen reap) does.
// It never deletes a node under a path in spare.
func (r *searchRun) operator(root string, spare ...string) (stop func()) {
	w := r.Session(101)
	rng := rand.New(rand.NewPCG(r.Config.Seed, 0x0fe7))
	halt, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-halt:
				return
			case <-time.After(time.Duration(200+rng.IntN(1300)) * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s, err := w.Get(ctx)
			if err == nil {
				var eph []string
				var walk func(p string)
				walk = func(p string) {
					st, err := runtime.Await(ctx, s, func() (*zk.Stat, error) { _, st, err := s.Conn().Get(p); return st, err })
					if err != nil {
						return
					}
					if st.EphemeralOwner != 0 && !slices.ContainsFunc(spare, func(x string) bool { return strings.HasPrefix(p, x+"/") }) {
						eph = append(eph, p)
					}
					kids, _ := runtime.Await(ctx, s, func() ([]string, error) { kids, _, err := s.Conn().Children(p); return kids, err })
					slices.Sort(kids)
					for _, k := range kids {
						walk(p + "/" + k)
					}
				}
				walk(root)
				if len(eph) > 0 {
					p := eph[rng.IntN(len(eph))]
					_, err := runtime.Await(ctx, s, func() (struct{}, error) { return struct{}{}, s.Conn().Delete(p, -1) })
					r.Event(-1, "operator deletes %s: %v", p, err)
				}
			}
			cancel()
		}
	}()
	return func() {
		close(halt)
		<-done
	}
}

func tenureSearch(r *searchRun, kind string, reap bool) {
	r.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	stopOperator := func() {}
	if reap {
		stopOperator = r.operator("/t")
	}
	contenders, rounds := r.Config.Procs, r.Config.Ops
	var mu sync.Mutex
	var spans []tenureSpan
	var wg sync.WaitGroup
	for i := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := r.Session(i)
			rng := r.Rand(i)
			for k := 0; k < rounds && ctx.Err() == nil; {
				s, err := w.Get(ctx)
				if err != nil {
					continue
				}
				lost, release, sp, err := takeTenure(ctx, s, kind, i)
				if err != nil {
					r.Event(i, "take: %v", err)
					continue
				}
				sp.start = time.Now()
				r.Event(i, "holds (epoch %d, token %d)", sp.epoch, sp.token)
				crash := rng.IntN(10) == 0
				work := 50 * time.Millisecond // a burst of work
				if r.hold > 0 {
					work = time.Duration(rng.Int64N(int64(r.hold))) // quiet: its client only pings
				}
				select {
				case <-lost:
					r.Event(i, "told lost")
				case <-time.After(work):
				}
				sp.end = time.Now() // told lost, done, or dead: it acts no more
				switch {
				case crash:
					r.Crash(i, w)
				case rng.IntN(4) == 0: // in a hurry: gives the release 5 ms
					rctx, rcancel := context.WithTimeout(ctx, 5*time.Millisecond)
					r.Event(i, "released in a hurry: %v", release(rctx))
					rcancel()
				default:
					r.Event(i, "released: %v", release(ctx))
				}
				mu.Lock()
				spans = append(spans, sp)
				mu.Unlock()
				k++
			}
		}()
	}
	wg.Wait()
	stopOperator()
	if ctx.Err() != nil {
		r.Stall("the contenders did not finish: %d tenures\n%s", len(spans), simDump(r.Server(), "/t"))
	}
	r.Finish("/t", 30*time.Second, "/t", "/t/*", "/t/elect/epoch")
	limit := 1
	if kind == "semaphore" {
		limit = 2
	}
	for _, a := range spans {
		if reap {
			// A holder whose node an operator deleted is not told at once
			// on a silent connection (the documented window only fencing
			// closes): tokens, epochs, progress and orphans are checked.
			break
		}
		// The tenures on at a's start: at most limit (a included), and
		// none exclusive beside a unless a is alone.
		on, exclusive := 0, false
		for _, b := range spans {
			if !b.start.After(a.start) && b.end.After(a.start) {
				on++
				exclusive = exclusive || b.write
			}
		}
		switch {
		case kind != "rwlock" && on > limit:
			r.Violate("at most N holders", "%d tenures on at %s (at most %d)", on, r.Since(a.start), limit)
		case kind == "rwlock" && exclusive && on > 1:
			r.Violate("a writer holds alone", "a writer and %d other tenures on at %s", on-1, r.Since(a.start))
		}
	}
	if kind == "lock" || kind == "lock-kazoo" {
		slices.SortFunc(spans, byStart)
		for k := 1; k < len(spans); k++ {
			if spans[k].token <= spans[k-1].token {
				r.Violate("fencing tokens strictly grow", "p%d's tenure at %s has token %d after token %d",
					spans[k].who, r.Since(spans[k].start), spans[k].token, spans[k-1].token)
			}
		}
	}
	if kind == "election" {
		slices.SortFunc(spans, byStart)
		for k := 1; k < len(spans); k++ {
			if spans[k].epoch <= spans[k-1].epoch {
				r.Violate("epochs strictly grow", "leadership of p%d at %s has epoch %d after epoch %d",
					spans[k].who, r.Since(spans[k].start), spans[k].epoch, spans[k-1].epoch)
			}
		}
	}
	r.Logf("%d tenures", len(spans))
}

// simDump lists the nodes under root with their owners, and the live
// sessions, for a failure's report (faults off).
func simDump(srv *sim.Server, root string) string {
	srv.SetFaultRate(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := runtime.Connect(ctx, srv.Servers(), runtime.WithDialer(srv.DialerFor("dump")),
		runtime.WithLogger(slog.New(slog.DiscardHandler)), runtime.WithRandomSeed(1))
	if err != nil {
		return "dump: " + err.Error()
	}
	defer s.Close()
	out := fmt.Sprintf("live sessions: %x (dump's own: %x)\n", srv.Sessions(), s.ID())
	var walk func(p string)
	walk = func(p string) {
		data, st, err := s.Conn().Get(p)
		if err != nil {
			out += fmt.Sprintf("%s: %v\n", p, err)
			return
		}
		out += fmt.Sprintf("%s owner=%x czxid=%d data=%q\n", p, st.EphemeralOwner, st.Czxid, data)
		kids, _, _ := s.Conn().Children(p)
		slices.Sort(kids)
		for _, k := range kids {
			walk(p + "/" + k)
		}
	}
	walk(root)
	return out
}

// The counter workload: workers add 1 to a counter under random faults on
// virtual time. Checked on what they saw: no two successful Adds returned
// the same value (each is one atomic step), and the final value is at
// least the successful Adds and at most those plus the failed ones (a
// failed Add applied at most once: ErrOutcomeUnknown, or the session's end
// after the write was sent).
func counterSearch(r *searchRun) {
	r.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	workers, adds := r.Config.Procs, r.Config.Ops
	var mu sync.Mutex
	seen := map[int64]int{} // value returned -> how many Adds returned it
	ok, unknown := 0, 0
	var ops []porcupine.Operation // for the linearizability check
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := r.Session(i)
			for n := 0; n < adds && ctx.Err() == nil; {
				s, err := w.Get(ctx)
				if err != nil {
					continue
				}
				call := time.Now().UnixNano()
				v, err := runtime.NewCounter(s, runtime.At("/c")).Add(ctx, 1)
				r.Event(i, "add 1: %d, %v", v, err)
				mu.Lock()
				ops = append(ops, porcupine.Operation{ClientId: i, Input: ctrIn{add: true, delta: 1},
					Output: ctrOut{unknown: err != nil, val: v}, Call: call, Return: time.Now().UnixNano()})
				switch {
				case err == nil:
					seen[v]++
					ok++
					n++
				default:
					// At most once: ErrOutcomeUnknown, or the session's
					// end after the write was sent (see Add).
					unknown++
					n++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		r.Stall("the workers did not finish")
	}
	r.Calm()
	w := r.Session(100)
	s, err := w.Get(ctx)
	if err != nil {
		r.Fatalf("%v", err)
	}
	call := time.Now().UnixNano()
	final, err := runtime.NewCounter(s, runtime.At("/c")).Add(ctx, 0)
	if err != nil {
		r.Fatalf("reading the counter: %v", err)
	}
	ops = append(ops, porcupine.Operation{ClientId: workers, Input: ctrIn{}, Output: ctrOut{val: final},
		Call: call, Return: time.Now().UnixNano()})
	// The same specification as TestCounterHistoryLinearizable's: an Add of
	// unknown outcome applied once or not at all, within its call.
	switch res, _ := porcupine.CheckOperationsVerbose(counterModel, ops, 10*time.Second); res {
	case porcupine.Illegal:
		r.Violate("linearizable (porcupine)", "no order of the %d Adds and the final read fits a counter", len(ops))
	case porcupine.Unknown:
		r.Logf("porcupine: no answer in 10 s")
	}
	for v, n := range seen {
		if n > 1 {
			r.Violate("each Add one atomic step", "%d successful Adds returned %d", n, v)
		}
	}
	if final < int64(ok) || final > int64(ok+unknown) {
		r.Violate("every Add applied once, a failed one at most once", "final value %d, with %d successful Adds and %d unknown", final, ok, unknown)
	}
	r.Finish("/c", 10*time.Second, "/c")
	r.Logf("final %d, %d ok, %d unknown", final, ok, unknown)
}

// settleBubble, deferred first in a synctest bubble, lets the goroutines
// that outlive a closed session end before the bubble does: go-zookeeper's
// Close waits up to a second for its reply, and a release carried on in
// the background is bounded too. On virtual time it costs nothing.
func settleBubble() { time.Sleep(time.Minute) }

// The partitioner workload: members of an 8-partition partitioner join,
// stay a while and leave, over and over, under random faults on virtual
// time. A member acts on partition i from its acquired hook until its
// releasing hook or until it is told its membership is lost, whichever
// comes first; checked: no two members act on a partition at once.
func partitionerSearch(r *searchRun) {
	srv := r.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	const partitions = 8
	members, rounds := r.Config.Procs, r.Config.Ops
	type act struct {
		who, part  int
		start, end time.Time
	}
	var mu sync.Mutex
	var acts []act
	stopOperator := r.reaper("/p")
	var wg sync.WaitGroup
	for m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := r.Session(m)
			for k := 0; k < rounds && ctx.Err() == nil; {
				s, err := w.Get(ctx)
				if err != nil {
					continue
				}
				open := map[int]time.Time{}  // partition -> acting since
				ended := map[int]time.Time{} // partition -> acting until
				var omu sync.Mutex
				stop := func(i int) {
					omu.Lock()
					defer omu.Unlock()
					if at, ok := open[i]; ok {
						delete(open, i)
						ended[i] = time.Now()
						mu.Lock()
						acts = append(acts, act{who: m, part: i, start: at, end: time.Now()})
						mu.Unlock()
					}
				}
				a, err := runtime.NewPartitioner(s, runtime.At("/p"), partitions, runtime.StringCodec()).Join(ctx, fmt.Sprint(m),
					runtime.WithPartitionHooks(func(i int) {
						omu.Lock()
						open[i] = time.Now()
						omu.Unlock()
						r.Event(m, "acts on partition %d", i)
					}, stop), runtime.WithRebalanceDelay(0))
				if err != nil {
					r.Event(m, "join: %v", err)
					continue
				}
				r.Event(m, "joined")
				lost := a.Lost()
				select {
				case <-lost:
				case <-time.After(time.Duration(2+m) * time.Second): // stay a while
				}
				// Told lost, or leaving: every partition it still acts on
				// ends now (a releasing hook after the fact changes nothing).
				// Those its hooks started or ended at this very instant are
				// listed too: the loss wakes the hooks and this goroutine
				// together, and which runs first is the scheduler's pick
				// (ensemble-partitioner seed=630750258 listed [4 5 6] or
				// [] on one processor; reap-partitioner seed=7000, a start
				// hook, [4 5] or [] under the race detector's shuffle). So
				// the list is taken once the instant is over.
				now := time.Now()
				time.Sleep(time.Nanosecond)
				omu.Lock()
				var still []int
				for i := range open {
					still = append(still, i)
				}
				for i, at := range ended {
					if !at.Before(now) {
						still = append(still, i)
					}
				}
				slices.Sort(still) // the history the same on a replay
				omu.Unlock()
				for _, i := range still {
					stop(i)
				}
				r.Event(m, "stops acting on %v; leave: %v", still, a.Leave(ctx))
				k++
			}
		}()
	}
	wg.Wait()
	stopOperator()
	if ctx.Err() != nil {
		r.Stall("the members did not finish\n%s", simDump(srv, "/p"))
	}
	r.Finish("/p", 30*time.Second, "/p", "/p/*")
	for i, x := range acts {
		if r.reap {
			// A member whose owner or member node an operator deleted is
			// not told at once on a silent connection (the window only
			// fencing closes): progress and orphans are checked.
			break
		}
		for _, y := range acts[i+1:] {
			if x.part == y.part && x.who != y.who && x.start.Before(y.end) && y.start.Before(x.end) {
				r.Violate("a partition owned by one member at a time", "partition %d: p%d acted %s..%s and p%d %s..%s", x.part,
					x.who, r.Since(x.start), r.Since(x.end), y.who, r.Since(y.start), r.Since(y.end))
			}
		}
	}
	r.Logf("%d spans of work", len(acts))
}

// The TTL lease workload (holders that pause past their Expires release
// late, and must delete nothing then): holders of a 2-lease TTL set (ttl 2 s) acquire,
// work while renewing every 600 ms, and release — or stop renewing and
// vanish (a crash) — under random faults on virtual time, the server
// reaping expired nodes every 100 ms. A holder acts on its lease from
// Acquire's return until it releases, sees a renewal fail, or its Expires
// passes, whichever is first; checked: never more than 2 act at once.
func ttlLeaseSearch(r *searchRun) {
	srv := r.Start(sim.WithTTLNodes(100 * time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	const leases, ttl = 2, 2 * time.Second
	holders, rounds := r.Config.Procs, r.Config.Ops
	var mu sync.Mutex
	var spans []tenureSpan
	var wg sync.WaitGroup
	for h := range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := r.Session(h)
			for k := 0; k < rounds && ctx.Err() == nil; {
				s, err := w.Get(ctx)
				if err != nil {
					continue
				}
				le, err := runtime.NewTTLLeases(s, runtime.At("/l"), leases, ttl).Acquire(ctx, fmt.Sprintf("h%d-%d", h, k))
				if err != nil {
					r.Event(h, "acquire: %v", err)
					continue
				}
				sp := tenureSpan{who: h, start: time.Now()}
				r.Event(h, "holds a lease until %s", r.Since(le.Expires()))
				crash := (h+k)%3 == 0
				end := time.Now().Add(time.Duration(500+300*h) * time.Millisecond)
				for time.Now().Before(end) {
					time.Sleep(600 * time.Millisecond)
					if crash {
						continue // stops renewing: the server reaps it
					}
					err := le.Renew(ctx)
					r.Event(h, "renew: %v (until %s)", err, r.Since(le.Expires()))
					if err != nil {
						break
					}
				}
				sp.end = time.Now()
				if exp := le.Expires(); exp.Before(sp.end) {
					sp.end = exp // it stops acting at Expires
				}
				switch {
				case crash && k%2 == 1:
					// Paused past its Expires (the slot may be the next
					// holder's by now), it wakes and releases late: that
					// Release must not touch the slot.
					time.Sleep(time.Until(le.Expires()) + time.Duration(100+100*h)*time.Millisecond)
					r.Event(h, "late release after a pause: %v", le.Release(ctx))
				case crash:
					r.Event(h, "stops renewing (a crash)")
				default:
					r.Event(h, "release: %v", le.Release(ctx))
				}
				mu.Lock()
				spans = append(spans, sp)
				mu.Unlock()
				k++
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		r.Stall("the holders did not finish: %d spans\n%s", len(spans), simDump(srv, "/l"))
	}
	r.Finish("/l", 30*time.Second, "/l")
	if on, at := mostAtOnce(spans); on > leases {
		r.Violate("at most N holders", "%d holders act at %s (at most %d)", on, r.Since(at), leases)
	}
	r.Logf("%d leases held", len(spans))
}

// The 2PC workload: transactions of three participants under random
// faults on virtual time. A coordinator proposes and coordinates; each
// participant joins and votes (commit four times in five); everyone who
// asks the outcome gets one. Checked: every outcome reported for a
// transaction is the same, and a transaction commits only if every
// participant's commit vote was accepted — a participant whose abort vote
// was accepted never sees a commit.
func twoPCSearch(r *searchRun) {
	srv := r.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	parts := []runtime.Participant{"a", "b", "c"}
	txs := r.Config.Ops
	tx := func(s *runtime.Session, k int) *runtime.TwoPhaseCommit[string] {
		return runtime.NewTwoPhaseCommit(s, runtime.At(fmt.Sprintf("/tx/%d", k)), runtime.StringCodec(), parts)
	}
	var mu sync.Mutex
	outcomes := map[int][]runtime.Decision{}
	accepted := map[int]map[runtime.Participant]runtime.Decision{}
	rng := rand.New(rand.NewPCG(r.Config.Seed, 7))
	votes := map[int]map[runtime.Participant]runtime.Decision{}
	for k := range txs {
		votes[k] = map[runtime.Participant]runtime.Decision{}
		accepted[k] = map[runtime.Participant]runtime.Decision{}
		for _, p := range parts {
			votes[k][p] = runtime.Commit
			if rng.IntN(5) == 0 {
				votes[k][p] = runtime.Abort
			}
		}
	}
	// Process 4k coordinates transaction k, 4k+1.. are its participants.
	outcome := func(proc int, who string, k int, get func() (runtime.Decision, error)) {
		for ctx.Err() == nil {
			d, err := get()
			if err == nil {
				r.Event(proc, "%s: tx %d outcome %v", who, k, d)
				mu.Lock()
				outcomes[k] = append(outcomes[k], d)
				mu.Unlock()
				return
			}
		}
	}
	var wg sync.WaitGroup
	for k := range txs {
		wg.Add(1)
		go func() { // the coordinator
			defer wg.Done()
			w := r.Session(4 * k)
			for ctx.Err() == nil {
				s, err := w.Get(ctx)
				if err != nil {
					continue
				}
				err = tx(s, k).Propose(ctx)
				r.Event(4*k, "coordinator: tx %d propose: %v", k, err)
				if err == nil || errors.Is(err, runtime.ErrTxExists) {
					break
				}
			}
			outcome(4*k, "coordinator", k, func() (runtime.Decision, error) {
				s, err := w.Get(ctx)
				if err != nil {
					return 0, err
				}
				return tx(s, k).Coordinate(ctx)
			})
		}()
		for j, p := range parts {
			wg.Add(1)
			go func() { // a participant
				defer wg.Done()
				w := r.Session(4*k + 1 + j)
				for ctx.Err() == nil {
					s, err := w.Get(ctx)
					if err != nil {
						continue
					}
					h := tx(s, k)
					if err := h.Join(ctx, p); err != nil && !errors.Is(err, runtime.ErrAlreadyJoined) {
						continue
					}
					err = h.Vote(ctx, p, votes[k][p])
					r.Event(4*k+1+j, "%s: tx %d vote %v: %v", p, k, votes[k][p], err)
					if err == nil {
						mu.Lock()
						accepted[k][p] = votes[k][p]
						mu.Unlock()
					}
					if err == nil || errors.Is(err, runtime.ErrPresenceLost) || errors.Is(err, runtime.ErrAlreadyVoted) ||
						errors.Is(err, runtime.ErrAlreadyJoined) {
						break
					}
				}
				outcome(4*k+1+j, string(p), k, func() (runtime.Decision, error) {
					s, err := w.Get(ctx)
					if err != nil {
						return 0, err
					}
					return tx(s, k).Outcome(ctx)
				})
			}()
		}
	}
	wg.Wait()
	if ctx.Err() != nil {
		r.Stall("the transactions did not finish\n%s", simDump(srv, "/tx"))
	}
	// A transaction is durable (its node, votes and decision), and so is
	// the proposer's .coordinator node while its session lives (Propose).
	r.Finish("/tx", 30*time.Second, "/tx", "/tx/*", "/tx/*/[abc]", "/tx/*/.decision", "/tx/*/.coordinator")
	for k := range txs {
		ds := outcomes[k]
		for _, d := range ds[1:] {
			if d != ds[0] {
				r.Violate("2PC: one outcome", "tx %d: outcomes %v disagree", k, ds)
			}
		}
		if len(ds) == 0 || ds[0] != runtime.Commit {
			continue
		}
		for _, p := range parts {
			if accepted[k][p] != runtime.Commit {
				r.Violate("2PC: all or nothing", "tx %d committed, but %s's accepted vote was %v", k, p, accepted[k][p])
			}
		}
	}
	r.Logf("outcomes %v", outcomes)
}

// The Supervise workload: three services under Supervise, each running
// Lock.Do over and over with a unit of work under the lock's context,
// under random faults on virtual time: sessions end and Supervise starts
// the service again on a new one. A unit of work runs from the start of
// Do's function until it returns or its context ends, whichever is first.
// Checked: no two units overlap, and the services get all the work done
// (Supervise keeps them going across their sessions' ends).
func superviseSearch(r *searchRun) {
	srv := r.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	services, units := r.Config.Procs, r.Config.Ops
	var mu sync.Mutex
	var spans []tenureSpan
	done, restarts := 0, 0
	work, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for i := range services {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = runtime.Supervise(work, srv.Servers(), func(ctx context.Context, s *runtime.Session) error {
				l := runtime.NewLock(s, runtime.At("/svc/lock"))
				for {
					err := l.Do(ctx, func(ctx context.Context) error {
						sp := tenureSpan{who: i, start: time.Now()}
						r.Event(i, "unit starts (session %x)", s.ID())
						select {
						case <-time.After(40 * time.Millisecond):
						case <-ctx.Done():
						}
						sp.end = time.Now()
						finished := ctx.Err() == nil
						r.Event(i, "unit ends (finished %v)", finished)
						mu.Lock()
						spans = append(spans, sp)
						if finished {
							done++
							if done >= units {
								stop()
							}
						}
						mu.Unlock()
						return nil
					})
					if s.Err() != nil || ctx.Err() != nil {
						return s.Err()
					}
					_ = err // a lost lock or a fault: take it again
				}
			}, runtime.WithDialer(srv.DialerFor(fmt.Sprintf("p%d", i))), runtime.WithSessionTimeout(4*time.Second), runtime.WithRandomSeed(r.SessionSeed(i)),
				runtime.WithLogger(slog.New(slog.DiscardHandler)),
				runtime.WithSessionEvents(func(ev runtime.SessionEvent) {
					if ev.Generation > 1 {
						mu.Lock()
						restarts++
						mu.Unlock()
					}
				}))
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		r.Stall("%d of %d units done in 30 virtual minutes", done, units)
	}
	r.Finish("/svc", 30*time.Second, "/svc", "/svc/lock")
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.start.Before(b.end) && b.start.Before(a.end) {
				r.Violate("at most one holder", "units overlap: p%d %s..%s and p%d %s..%s", a.who, r.Since(a.start), r.Since(a.end),
					b.who, r.Since(b.start), r.Since(b.end))
			}
		}
	}
	r.Logf("%d units done, %d started, %d sessions replaced", done, len(spans), restarts)
}

// The fenced-reap workload: contenders for a lock write under it with
// Guarded while an operator reaps the lock's nodes every 30 ms (zkgen
// reap, under live sessions) and 3% of requests hit faults, on virtual
// time. A reaped holder whose connection is silent is not told at once —
// two contenders may both believe they hold, which only fencing covers —
// so what is checked is the fence: the guarded writes that applied, in
// the order they applied, carry non-decreasing fencing tokens (a stale
// holder's write never lands after its successor's).
func fencedReapSearch(r *searchRun) {
	r.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	setup := r.Session(100)
	for _, p := range []string{"/fr", "/fr/log"} {
		for ctx.Err() == nil {
			s0, err := setup.Get(ctx)
			if err == nil {
				_, err = s0.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll))
			}
			if err == nil || errors.Is(err, zk.ErrNodeExists) {
				break
			}
			time.Sleep(50 * time.Millisecond) // pace the retries: time must pass
		}
	}
	reapDone := make(chan struct{})
	stopReap := make(chan struct{})
	go func() { // the operator
		defer close(reapDone)
		for {
			select {
			case <-stopReap:
				return
			case <-time.After(30 * time.Millisecond):
			}
			if s, err := setup.Get(ctx); err == nil {
				_, _ = runtime.NewLock(s, runtime.At("/fr/lock")).Reap(ctx, 0)
			}
		}
	}()
	contenders, rounds := r.Config.Procs, r.Config.Ops
	var wg sync.WaitGroup
	for i := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := r.Session(i)
			for k := 0; k < rounds && ctx.Err() == nil; {
				s, err := w.Get(ctx)
				if err != nil {
					continue
				}
				l := runtime.NewLock(s, runtime.At("/fr/lock"))
				if l.Lock(ctx) != nil {
					time.Sleep(50 * time.Millisecond) // pace the retries
					continue
				}
				entry := []byte(fmt.Sprintf("%d %d", l.Token(), i))
				r.Event(i, "holds, token %d", l.Token())
				for range 2 { // two writes, some time apart
					_, err := l.Guarded(ctx, &zk.CreateRequest{Path: "/fr/log/e-", Data: entry, Flags: zk.FlagSequence,
						Acl: zk.WorldACL(zk.PermAll)})
					r.Event(i, "guarded write: %v", err)
					time.Sleep(20 * time.Millisecond)
				}
				r.Event(i, "unlock: %v", l.Unlock(ctx))
				k++
			}
		}()
	}
	wg.Wait()
	close(stopReap)
	<-reapDone
	if ctx.Err() != nil {
		r.Stall("the contenders did not finish")
	}
	r.Calm()
	s, err := setup.Get(ctx)
	if err != nil {
		r.Fatalf("%v", err)
	}
	kids, _, err := s.Conn().Children("/fr/log")
	if err != nil {
		r.Fatalf("%v", err)
	}
	slices.Sort(kids) // sequence order: the order the writes applied
	var last int64
	for _, k := range kids {
		data, _, err := s.Conn().Get("/fr/log/" + k)
		if err != nil {
			r.Fatalf("%v", err)
		}
		var token int64
		var who int
		fmt.Sscanf(string(data), "%d %d", &token, &who)
		if token < last {
			r.Violate("fencing tokens never go back", "%s by p%d has token %d, after a write with token %d: a stale holder's write landed",
				k, who, token, last)
		}
		last = max(last, token)
	}
	r.Finish("/fr", 30*time.Second, "/fr", "/fr/log", "/fr/log/*", "/fr/lock")
	r.Logf("%d guarded writes applied", len(kids))
}
