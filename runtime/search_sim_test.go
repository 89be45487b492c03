package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/sim"
)

// Searching for bugs on the simulator: each seed runs a queue workload
// under random faults (every request cut before or after it, or its replies
// held, with probability 3%) on virtual time, and checks the queue's
// contract on what the clients saw, not on how the queue works:
//
//   - at-most-once (Queue): no item is delivered twice; an item whose Put
//     returned nil is delivered unless a Take reported ErrTakeUncertain
//     (the loss the contract allows, one per uncertain take); nothing is
//     delivered that was not put;
//   - at-least-once (AckQueue): every item whose Put returned nil is acked;
//     no item is acked twice; nothing is delivered that was not put.
//
// searchSeeds seeds by default; ZKGEN_SIM_SEEDS=n runs n. The seed fixes
// the faults' draws, not the goroutines' interleaving.
func TestSimSearchQueues(t *testing.T) {
	for _, layout := range []string{"fifo", "priority", "delay"} {
		for _, ack := range []bool{false, true} {
			name := layout + "/at-most-once"
			if ack {
				name = layout + "/at-least-once"
			}
			t.Run(name, func(t *testing.T) {
				for seed := uint64(1); seed <= uint64(searchSeeds()); seed++ {
					synctest.Test(t, func(t *testing.T) { queueSearch(t, seed, layout, ack) })
				}
			})
		}
	}
}

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

// forSeeds runs search on seeds 1..searchSeeds(), each in a synctest
// bubble of its own.
func forSeeds(t *testing.T, search func(t *testing.T, seed uint64)) {
	for seed := uint64(1); seed <= uint64(searchSeeds()); seed++ {
		synctest.Test(t, func(t *testing.T) { search(t, seed) })
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

func searchSeeds() int {
	if n, err := strconv.Atoi(os.Getenv("ZKGEN_SIM_SEEDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// simSession keeps a session open on srv for a worker: a new one when the
// last one ended.
type simSession struct {
	srv *sim.Server
	s   *runtime.Session
}

func (w *simSession) get(ctx context.Context) (*runtime.Session, error) {
	if w.s != nil && w.s.Err() == nil {
		return w.s, nil
	}
	if w.s != nil {
		w.s.Close()
	}
	s, err := runtime.Connect(ctx, []string{"127.0.0.1:2181"}, runtime.WithDialer(w.srv.DialContext),
		runtime.WithSessionTimeout(4*time.Second), runtime.WithLogger(slog.New(slog.DiscardHandler)))
	w.s = s
	return s, err
}

func (w *simSession) close() {
	if w.s != nil {
		w.s.Close()
	}
}

func queueSearch(t *testing.T, seed uint64, layout string, ack bool) {
	defer settleBubble()
	q := newQueueVariant(layout, ack)
	srv := sim.New(sim.WithRandomFaults(seed, 0.03))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	const producers, consumers, items = 2, 2, 30
	var mu sync.Mutex
	put := map[string]bool{}          // Put returned nil
	uncertainPut := map[string]bool{} // Put returned ErrPutUncertain
	delivered := map[string]int{}
	acked := map[string]int{}
	ackUnknown := map[string]bool{} // Ack's outcome unknown: consumed, or delivered again
	due := map[string]time.Time{}   // a delay queue's items' due times
	var early []string              // delivered before due
	uncertainTakes := 0
	take := func(s *runtime.Session, tctx context.Context) {
		v, d, err := q.take(tctx, s)
		now := time.Now()
		if v == "" {
			if errors.Is(err, runtime.ErrTakeUncertain) {
				mu.Lock()
				uncertainTakes++
				mu.Unlock()
			}
			return
		}
		var aerr error
		if d != nil {
			aerr = d.Ack(ctx)
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
	done := make(chan struct{})
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &simSession{srv: srv}
			defer w.close()
			for i := 0; i < items; {
				s, err := w.get(ctx)
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
	for range consumers {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			w := &simSession{srv: srv}
			defer w.close()
			for {
				select {
				case <-done:
					return
				default:
				}
				s, err := w.get(ctx)
				if err != nil {
					continue
				}
				tctx, tcancel := context.WithTimeout(ctx, time.Second)
				take(s, tctx)
				tcancel()
			}
		}()
	}
	wg.Wait()
	close(done)
	cwg.Wait() // every worker's session closed: their claims are gone

	// Quiet: no more faults; one consumer drains what is left.
	srv.SetFaultRate(0)
	drain := &simSession{srv: srv}
	for {
		s, err := drain.get(ctx)
		if err != nil {
			t.Fatalf("seed %d: the drain cannot connect without faults: %v", seed, err)
		}
		mu.Lock()
		n := 0
		for _, k := range delivered {
			n += k
		}
		mu.Unlock()
		tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
		take(s, tctx)
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
	drain.close()

	mu.Lock()
	defer mu.Unlock()
	fail := func(format string, args ...any) {
		t.Errorf("seed %d (%s, ack %v): %s; %d faults", seed, layout, ack, fmt.Sprintf(format, args...), len(srv.FaultLog()))
	}
	for _, e := range early {
		fail("delivered before its due time: %s", e)
	}
	for item, n := range delivered {
		if !put[item] && !uncertainPut[item] {
			fail("%s delivered but never put", item)
		}
		if !ack && n > 1 {
			fail("%s delivered %d times by an at-most-once queue", item, n)
		}
	}
	lost := 0
	for item := range put {
		switch {
		case ack && acked[item] > 1:
			fail("%s acked %d times", item, acked[item])
		case ack && acked[item] == 0 && !ackUnknown[item]:
			fail("%s put and never acked (delivered %d times)", item, delivered[item])
		case !ack && delivered[item] == 0:
			lost++
		}
	}
	if lost > uncertainTakes {
		fail("%d items put and never delivered, with %d uncertain takes", lost, uncertainTakes)
	}
	t.Logf("seed %d (%s, ack %v): %d put (%d uncertain), %d delivered, %d acked, %d lost with %d uncertain takes, %d faults",
		seed, layout, ack, len(put), len(uncertainPut), len(delivered), len(acked), lost, uncertainTakes, len(srv.FaultLog()))
}

// TestSimSearchTenures runs contenders for a tenure under random faults on
// virtual time and checks, on what they saw, that at most max tenures are
// on at any moment — a tenure runs from its grant until its holder stops
// acting on it: it gives it up, or is told it is lost — and, for
// elections, that epochs strictly grow from one leadership to the next:
// a semaphore of 2 leases, an election, and the write and read sides of a
// read/write lock (writers alone; readers with readers only).
func TestSimSearchTenures(t *testing.T) {
	for _, kind := range []string{"semaphore", "election", "rwlock"} {
		t.Run(kind, func(t *testing.T) {
			for seed := uint64(1); seed <= uint64(searchSeeds()); seed++ {
				synctest.Test(t, func(t *testing.T) { tenureSearch(t, seed, kind) })
			}
		})
	}
}

// tenureSpan is one tenure as its holder saw it.
type tenureSpan struct {
	who        int
	write      bool  // exclusive (a lock's, a leadership's, a writer's)
	epoch      int64 // elections
	start, end time.Time
}

// tenure takes one tenure of kind on s for contender i; it returns the
// tenure's end signal, its release, and its span's fields.
func takeTenure(ctx context.Context, s *runtime.Session, kind string, i int) (lost <-chan struct{}, release func(), sp tenureSpan, err error) {
	sp.who, sp.write = i, true
	switch kind {
	case "semaphore":
		le, err := runtime.NewSemaphore(s, runtime.At("/t/sem"), 2).Acquire(ctx)
		if err != nil {
			return nil, nil, sp, err
		}
		sp.write = false
		return le.Lost(), func() { _ = le.Release(ctx) }, sp, nil
	case "election":
		l, err := runtime.NewElection(s, runtime.At("/t/elect"), runtime.StringCodec()).Campaign(ctx, fmt.Sprint(i))
		if err != nil {
			return nil, nil, sp, err
		}
		sp.epoch = l.Epoch()
		return l.Lost(), func() { _ = l.Resign(ctx) }, sp, nil
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
		return h.Lost(), func() { _ = h.Unlock(ctx) }, sp, nil
	}
}

func tenureSearch(t *testing.T, seed uint64, kind string) {
	defer settleBubble()
	srv := sim.New(sim.WithRandomFaults(seed, 0.03))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	const contenders, rounds = 4, 8
	var mu sync.Mutex
	var spans []tenureSpan
	var wg sync.WaitGroup
	for i := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &simSession{srv: srv}
			defer w.close()
			for r := 0; r < rounds && ctx.Err() == nil; {
				s, err := w.get(ctx)
				if err != nil {
					continue
				}
				lost, release, sp, err := takeTenure(ctx, s, kind, i)
				if err != nil {
					continue
				}
				sp.start = time.Now()
				select {
				case <-lost:
				case <-time.After(50 * time.Millisecond): // the work
				}
				sp.end = time.Now() // told lost, or done: it acts no more
				release()
				mu.Lock()
				spans = append(spans, sp)
				mu.Unlock()
				r++
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("seed %d (%s): the contenders did not finish: %d tenures\n%s", seed, kind, len(spans), simDump(srv, "/t"))
	}
	limit := 1
	if kind == "semaphore" {
		limit = 2
	}
	for _, a := range spans {
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
			t.Errorf("seed %d (%s): %d tenures on at %v (at most %d)", seed, kind, on, a.start, limit)
		case kind == "rwlock" && exclusive && on > 1:
			t.Errorf("seed %d (rwlock): a writer and %d other tenures on at %v", seed, on-1, a.start)
		}
	}
	if kind == "election" {
		slices.SortFunc(spans, func(a, b tenureSpan) int { return a.start.Compare(b.start) })
		for k := 1; k < len(spans); k++ {
			if spans[k].epoch <= spans[k-1].epoch {
				t.Errorf("seed %d: leadership of %d at %v has epoch %d after epoch %d", seed, spans[k].who, spans[k].start, spans[k].epoch, spans[k-1].epoch)
			}
		}
	}
	t.Logf("seed %d (%s): %d tenures, %d faults", seed, kind, len(spans), len(srv.FaultLog()))
}

// simDump lists the nodes under root with their owners, and the live
// sessions, for a failure's report (faults off).
func simDump(srv *sim.Server, root string) string {
	srv.SetFaultRate(0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := runtime.Connect(ctx, []string{"127.0.0.1:2181"}, runtime.WithDialer(srv.DialContext),
		runtime.WithLogger(slog.New(slog.DiscardHandler)))
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

// TestSimSearchCounter: workers add 1 to a counter under random faults on
// virtual time. Checked on what they saw: no two successful Adds returned
// the same value (each is one atomic step), and the final value is at
// least the successful Adds and at most those plus the failed ones (a
// failed Add applied at most once: ErrOutcomeUnknown, or the session's end
// after the write was sent).
func TestSimSearchCounter(t *testing.T) {
	forSeeds(t, counterSearch)
}

func counterSearch(t *testing.T, seed uint64) {
	defer settleBubble()
	srv := sim.New(sim.WithRandomFaults(seed, 0.03))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	const workers, adds = 3, 20
	var mu sync.Mutex
	seen := map[int64]int{} // value returned -> how many Adds returned it
	ok, unknown := 0, 0
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &simSession{srv: srv}
			defer w.close()
			for n := 0; n < adds && ctx.Err() == nil; {
				s, err := w.get(ctx)
				if err != nil {
					continue
				}
				v, err := runtime.NewCounter(s, runtime.At("/c")).Add(ctx, 1)
				mu.Lock()
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
	srv.SetFaultRate(0)
	w := &simSession{srv: srv}
	defer w.close()
	s, err := w.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	final, err := runtime.NewCounter(s, runtime.At("/c")).Add(ctx, 0)
	if err != nil {
		t.Fatalf("seed %d: reading the counter: %v", seed, err)
	}
	for v, n := range seen {
		if n > 1 {
			t.Errorf("seed %d: %d successful Adds returned %d", seed, n, v)
		}
	}
	if final < int64(ok) || final > int64(ok+unknown) {
		t.Errorf("seed %d: final value %d, with %d successful Adds and %d unknown", seed, final, ok, unknown)
	}
	t.Logf("seed %d: final %d, %d ok, %d unknown, %d faults", seed, final, ok, unknown, len(srv.FaultLog()))
}

// settleBubble, deferred first in a synctest bubble, lets the goroutines
// that outlive a closed session end before the bubble does: go-zookeeper's
// Close waits up to a second for its reply, and a release carried on in
// the background is bounded too. On virtual time it costs nothing.
func settleBubble() { time.Sleep(time.Minute) }

// TestSimSearchPartitioner: members of an 8-partition partitioner join,
// stay a while and leave, over and over, under random faults on virtual
// time. A member acts on partition i from its acquired hook until its
// releasing hook or until it is told its membership is lost, whichever
// comes first; checked: no two members act on a partition at once.
func TestSimSearchPartitioner(t *testing.T) {
	forSeeds(t, partitionerSearch)
}

func partitionerSearch(t *testing.T, seed uint64) {
	defer settleBubble()
	srv := sim.New(sim.WithRandomFaults(seed, 0.02))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	const members, partitions, rounds = 3, 8, 4
	type act struct {
		who, part  int
		start, end time.Time
	}
	var mu sync.Mutex
	var acts []act
	var wg sync.WaitGroup
	for m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &simSession{srv: srv}
			defer w.close()
			for r := 0; r < rounds && ctx.Err() == nil; {
				s, err := w.get(ctx)
				if err != nil {
					continue
				}
				open := map[int]time.Time{} // partition -> acting since
				var omu sync.Mutex
				stop := func(i int) {
					omu.Lock()
					defer omu.Unlock()
					if at, ok := open[i]; ok {
						delete(open, i)
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
					}, stop), runtime.WithRebalanceDelay(0))
				if err != nil {
					continue
				}
				lost := a.Lost()
				select {
				case <-lost:
				case <-time.After(time.Duration(2+m) * time.Second): // stay a while
				}
				// Told lost, or leaving: every partition it still acts on
				// ends now (a releasing hook after the fact changes nothing).
				omu.Lock()
				var still []int
				for i := range open {
					still = append(still, i)
				}
				omu.Unlock()
				for _, i := range still {
					stop(i)
				}
				_ = a.Leave(ctx)
				r++
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("seed %d: the members did not finish\n%s", seed, simDump(srv, "/p"))
	}
	for i, x := range acts {
		for _, y := range acts[i+1:] {
			if x.part == y.part && x.who != y.who && x.start.Before(y.end) && y.start.Before(x.end) {
				t.Errorf("seed %d: partition %d: member %d acted %v..%v and member %d %v..%v", seed, x.part,
					x.who, x.start, x.end, y.who, y.start, y.end)
			}
		}
	}
	t.Logf("seed %d: %d spans of work, %d faults", seed, len(acts), len(srv.FaultLog()))
}

// TestSimSearchTTLLeases: holders of a 2-lease TTL set (ttl 2 s) acquire,
// work while renewing every 600 ms, and release — or stop renewing and
// vanish (a crash) — under random faults on virtual time, the server
// reaping expired nodes every 100 ms. A holder acts on its lease from
// Acquire's return until it releases, sees a renewal fail, or its Expires
// passes, whichever is first; checked: never more than 2 act at once.
func TestSimSearchTTLLeases(t *testing.T) {
	forSeeds(t, ttlLeaseSearch)
}

func ttlLeaseSearch(t *testing.T, seed uint64) {
	defer settleBubble()
	srv := sim.New(sim.WithRandomFaults(seed, 0.03), sim.WithTTLNodes(100*time.Millisecond))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	const holders, rounds, leases, ttl = 4, 5, 2, 2 * time.Second
	var mu sync.Mutex
	var spans []tenureSpan
	var wg sync.WaitGroup
	for h := range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &simSession{srv: srv}
			defer w.close()
			for r := 0; r < rounds && ctx.Err() == nil; {
				s, err := w.get(ctx)
				if err != nil {
					continue
				}
				le, err := runtime.NewTTLLeases(s, runtime.At("/l"), leases, ttl).Acquire(ctx, fmt.Sprintf("h%d-%d", h, r))
				if err != nil {
					continue
				}
				sp := tenureSpan{who: h, start: time.Now()}
				crash := (h+r)%3 == 0
				end := time.Now().Add(time.Duration(500+300*h) * time.Millisecond)
				for time.Now().Before(end) {
					time.Sleep(600 * time.Millisecond)
					if crash {
						continue // stops renewing: the server reaps it
					}
					if le.Renew(ctx) != nil {
						break
					}
				}
				sp.end = time.Now()
				if exp := le.Expires(); exp.Before(sp.end) {
					sp.end = exp // it stops acting at Expires
				}
				if !crash {
					_ = le.Release(ctx)
				}
				mu.Lock()
				spans = append(spans, sp)
				mu.Unlock()
				r++
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("seed %d: the holders did not finish: %d spans\n%s", seed, len(spans), simDump(srv, "/l"))
	}
	if on, at := mostAtOnce(spans); on > leases {
		t.Errorf("seed %d: %d holders act at %v (at most %d)", seed, on, at, leases)
	}
	t.Logf("seed %d: %d leases held, %d faults", seed, len(spans), len(srv.FaultLog()))
}

// TestSimSearchTwoPC: transactions of three participants under random
// faults on virtual time. A coordinator proposes and coordinates; each
// participant joins and votes (commit four times in five); everyone who
// asks the outcome gets one. Checked: every outcome reported for a
// transaction is the same, and a transaction commits only if every
// participant's commit vote was accepted — a participant whose abort vote
// was accepted never sees a commit.
func TestSimSearchTwoPC(t *testing.T) {
	forSeeds(t, twoPCSearch)
}

func twoPCSearch(t *testing.T, seed uint64) {
	defer settleBubble()
	srv := sim.New(sim.WithRandomFaults(seed, 0.02))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	parts := []runtime.Participant{"a", "b", "c"}
	const txs = 4
	tx := func(s *runtime.Session, k int) *runtime.TwoPhaseCommit[string] {
		return runtime.NewTwoPhaseCommit(s, runtime.At(fmt.Sprintf("/tx/%d", k)), runtime.StringCodec(), parts)
	}
	var mu sync.Mutex
	outcomes := map[int][]runtime.Decision{}
	accepted := map[int]map[runtime.Participant]runtime.Decision{}
	rng := rand.New(rand.NewPCG(seed, 7))
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
	outcome := func(k int, get func() (runtime.Decision, error)) {
		for ctx.Err() == nil {
			d, err := get()
			if err == nil {
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
			w := &simSession{srv: srv}
			defer w.close()
			for ctx.Err() == nil {
				s, err := w.get(ctx)
				if err != nil {
					continue
				}
				if err := tx(s, k).Propose(ctx); err == nil || errors.Is(err, runtime.ErrTxExists) {
					break
				}
			}
			outcome(k, func() (runtime.Decision, error) {
				s, err := w.get(ctx)
				if err != nil {
					return 0, err
				}
				return tx(s, k).Coordinate(ctx)
			})
		}()
		for _, p := range parts {
			wg.Add(1)
			go func() { // a participant
				defer wg.Done()
				w := &simSession{srv: srv}
				defer w.close()
				for ctx.Err() == nil {
					s, err := w.get(ctx)
					if err != nil {
						continue
					}
					h := tx(s, k)
					if err := h.Join(ctx, p); err != nil && !errors.Is(err, runtime.ErrAlreadyJoined) {
						continue
					}
					err = h.Vote(ctx, p, votes[k][p])
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
				outcome(k, func() (runtime.Decision, error) {
					s, err := w.get(ctx)
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
		t.Fatalf("seed %d: the transactions did not finish\n%s", seed, simDump(srv, "/tx"))
	}
	for k := range txs {
		ds := outcomes[k]
		for _, d := range ds[1:] {
			if d != ds[0] {
				t.Errorf("seed %d: tx %d: outcomes %v disagree", seed, k, ds)
			}
		}
		if len(ds) == 0 || ds[0] != runtime.Commit {
			continue
		}
		for _, p := range parts {
			if accepted[k][p] != runtime.Commit {
				t.Errorf("seed %d: tx %d committed, but %s's accepted vote was %v", seed, k, p, accepted[k][p])
			}
		}
	}
	t.Logf("seed %d: outcomes %v, %d faults", seed, outcomes, len(srv.FaultLog()))
}

// TestSimSearchSupervise: three services under Supervise, each running
// Lock.Do over and over with a unit of work under the lock's context,
// under random faults on virtual time: sessions end and Supervise starts
// the service again on a new one. A unit of work runs from the start of
// Do's function until it returns or its context ends, whichever is first.
// Checked: no two units overlap, and the services get all the work done
// (Supervise keeps them going across their sessions' ends).
func TestSimSearchSupervise(t *testing.T) {
	forSeeds(t, superviseSearch)
}

func superviseSearch(t *testing.T, seed uint64) {
	defer settleBubble()
	srv := sim.New(sim.WithRandomFaults(seed, 0.03))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	const services, units = 3, 30
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
			_ = runtime.Supervise(work, []string{"127.0.0.1:2181"}, func(ctx context.Context, s *runtime.Session) error {
				l := runtime.NewLock(s, runtime.At("/svc/lock"))
				for {
					err := l.Do(ctx, func(ctx context.Context) error {
						sp := tenureSpan{who: i, start: time.Now()}
						select {
						case <-time.After(40 * time.Millisecond):
						case <-ctx.Done():
						}
						sp.end = time.Now()
						finished := ctx.Err() == nil
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
			}, runtime.WithDialer(srv.DialContext), runtime.WithSessionTimeout(4*time.Second),
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
		t.Fatalf("seed %d: %d of %d units done in 30 virtual minutes", seed, done, units)
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.start.Before(b.end) && b.start.Before(a.end) {
				t.Errorf("seed %d: units overlap: %d %v..%v and %d %v..%v", seed, a.who, a.start, a.end, b.who, b.start, b.end)
			}
		}
	}
	t.Logf("seed %d: %d units done, %d started, %d sessions replaced, %d faults", seed, done, len(spans), restarts, len(srv.FaultLog()))
}

// TestSimSearchFencedUnderReap: contenders for a lock write under it with
// Guarded while an operator reaps the lock's nodes every 30 ms (zkgen
// reap, under live sessions) and 3% of requests hit faults, on virtual
// time. A reaped holder whose connection is silent is not told at once —
// two contenders may both believe they hold, which only fencing covers —
// so what is checked is the fence: the guarded writes that applied, in
// the order they applied, carry non-decreasing fencing tokens (a stale
// holder's write never lands after its successor's).
func TestSimSearchFencedUnderReap(t *testing.T) {
	forSeeds(t, fencedReapSearch)
}

func fencedReapSearch(t *testing.T, seed uint64) {
	defer settleBubble()
	srv := sim.New(sim.WithRandomFaults(seed, 0.03))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	setup := &simSession{srv: srv}
	defer setup.close()
	for _, p := range []string{"/fr", "/fr/log"} {
		for ctx.Err() == nil {
			s0, err := setup.get(ctx)
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
			if s, err := setup.get(ctx); err == nil {
				_, _ = runtime.NewLock(s, runtime.At("/fr/lock")).Reap(ctx, 0)
			}
		}
	}()
	const contenders, rounds = 3, 10
	var wg sync.WaitGroup
	for i := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &simSession{srv: srv}
			defer w.close()
			for r := 0; r < rounds && ctx.Err() == nil; {
				s, err := w.get(ctx)
				if err != nil {
					continue
				}
				l := runtime.NewLock(s, runtime.At("/fr/lock"))
				if l.Lock(ctx) != nil {
					time.Sleep(50 * time.Millisecond) // pace the retries
					continue
				}
				entry := []byte(fmt.Sprintf("%d %d", l.Token(), i))
				for range 2 { // two writes, some time apart
					_, _ = l.Guarded(ctx, &zk.CreateRequest{Path: "/fr/log/e-", Data: entry, Flags: zk.FlagSequence,
						Acl: zk.WorldACL(zk.PermAll)})
					time.Sleep(20 * time.Millisecond)
				}
				_ = l.Unlock(ctx)
				r++
			}
		}()
	}
	wg.Wait()
	close(stopReap)
	<-reapDone
	if ctx.Err() != nil {
		t.Fatalf("seed %d: the contenders did not finish", seed)
	}
	srv.SetFaultRate(0)
	s, err := setup.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	kids, _, err := s.Conn().Children("/fr/log")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(kids) // sequence order: the order the writes applied
	var last int64
	for _, k := range kids {
		data, _, err := s.Conn().Get("/fr/log/" + k)
		if err != nil {
			t.Fatal(err)
		}
		var token int64
		var who int
		fmt.Sscanf(string(data), "%d %d", &token, &who)
		if token < last {
			t.Errorf("seed %d: %s by contender %d has token %d, after a write with token %d: a stale holder's write landed",
				seed, k, who, token, last)
		}
		last = max(last, token)
	}
	t.Logf("seed %d: %d guarded writes applied, %d faults", seed, len(kids), len(srv.FaultLog()))
}
