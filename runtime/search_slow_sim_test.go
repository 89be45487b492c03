package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest/simsearch"
)

// The slow-consumer workloads (issue 41): one consumer alive but slow
// (150 ms of work an item, so it keeps its chunk claimed), the others fast,
// on a FIFO queue. Under faults they drain a first batch; then, with the
// faults stopped and every session that was cut off over, a second batch
// of three chunks is put at once, and no Take of a fast consumer that
// begins after it may wait longer than the bound on waiting for others'
// chunks (runtime.ChunkWait) and a second while two items or more are
// still queued: a slow claimer holds no one back longer. Throughout, nothing is delivered twice at most once (but
// by an uncertain take), and every item put is acked at least once.
var slowQueueWorkloads = []workload{
	{name: "queue-slow", procs: 3, ops: 20, minProcs: 2, rate: 0.03, run: func(r *searchRun) { slowQueueSearch(r, false) }},
	{name: "ackqueue-slow", procs: 3, ops: 20, minProcs: 2, rate: 0.03, run: func(r *searchRun) { slowQueueSearch(r, true) }},
}

// slowWork is the slow consumer's work on an item.
const slowWork = 150 * time.Millisecond

// slowRun is the state of one slow-consumer run.
type slowRun struct {
	r   *searchRun
	q   queueVariant
	ack bool

	mu        sync.Mutex
	put       map[string]bool
	uncertain int // puts, takes and acks of unknown outcome
	delivered map[string]int
	acked     map[string]int
	from      time.Time // fast takes begun after it are timed; zero: none yet
	takenAt   map[string]time.Time
	waits     []slowWait // the timed takes
}

// slowWait is a fast consumer's timed take.
type slowWait struct {
	who        int
	began, end time.Time
}

func slowQueueSearch(r *searchRun, ack bool) {
	sr := &slowRun{r: r, q: newQueueVariant("fifo", ack), ack: ack,
		put: map[string]bool{}, delivered: map[string]int{}, acked: map[string]int{}, takenAt: map[string]time.Time{}}
	r.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute) // virtual
	defer cancel()
	consumers := max(2, r.Config.Procs)
	producer := r.Session(100)
	// The consumers' takes end only when the run does: a take that waits
	// behind the slow consumer is timed to its end.
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sr.consume(cctx, c, c == 0)
		}()
	}
	sr.putBatch(ctx, producer, "a", r.Config.Ops)
	sr.waitDrained(ctx, "a")

	// Calm: no faults; every session cut off has ended by its own clock
	// or the server's (the sessions' timeout is 4 s).
	r.Calm()
	time.Sleep(6 * time.Second)
	sr.putAll(ctx, producer, "b", 3*runtime.SpreadChunk)
	sr.mu.Lock()
	sr.from = time.Now()
	sr.mu.Unlock()
	sr.waitDrained(ctx, "b")
	stop()
	wg.Wait()
	// The processes stopped: what they held lingers a moment, and sessions
	// their clients gave up on end in the server.
	r.Quiet("/q", 30*time.Second)
	r.CloseSessions()
	sr.drain(ctx)
	r.Finish("/q", 0, queueDurable...)
	sr.check()
}

// drain takes (and acks) what uncertain takes and acks of the first
// batch left in the queue, until nothing comes for 10 virtual seconds.
func (sr *slowRun) drain(ctx context.Context) {
	w := sr.r.Session(101)
	s, err := w.Get(ctx)
	if err != nil {
		sr.r.Fatalf("the drain cannot connect without faults: %v", err)
	}
	for {
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		v, d, _ := sr.q.take(tctx, s)
		cancel()
		if v == "" {
			return
		}
		sr.took(v, nil)
		if d != nil {
			if err := d.Ack(ctx); err != nil {
				sr.r.Fatalf("the drain's ack of %s without faults: %v", v, err)
			}
		}
		sr.r.Event(-1, "drained %s", v)
	}
}

// putBatch puts n items named batch-i, each until it is in (or may be).
func (sr *slowRun) putBatch(ctx context.Context, w *simsearch.Session, batch string, n int) {
	for i := 0; i < n; {
		s, err := w.Get(ctx)
		if err != nil {
			continue
		}
		item := fmt.Sprintf("%s-%03d", batch, i)
		err = sr.q.put(ctx, s, item, time.Time{})
		sr.r.Event(-1, "put %s: %v", item, err)
		sr.mu.Lock()
		switch {
		case err == nil:
			sr.put[item] = true
			i++
		case errors.Is(err, runtime.ErrPutUncertain):
			sr.uncertain++
			i++
		}
		sr.mu.Unlock()
	}
}

// putAll puts n items named batch-i at once (PutAll), so that they are
// listed together and consumers claim chunks of them: no faults now.
func (sr *slowRun) putAll(ctx context.Context, w *simsearch.Session, batch string, n int) {
	s, err := w.Get(ctx)
	if err != nil {
		sr.r.Fatalf("the producer cannot connect without faults: %v", err)
	}
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf("%s-%03d", batch, i)
	}
	at, codec := runtime.At("/q"), runtime.StringCodec()
	if sr.ack {
		_, err = runtime.NewAckQueue(s, at, codec).PutAll(ctx, items)
	} else {
		_, err = runtime.NewQueue(s, at, codec).PutAll(ctx, items)
	}
	sr.r.Event(-1, "put %s-000..%s-%03d: %v", batch, batch, n-1, err)
	if err != nil {
		sr.r.Fatalf("PutAll without faults: %v", err)
	}
	sr.mu.Lock()
	for _, it := range items {
		sr.put[it] = true
	}
	sr.mu.Unlock()
}

// waitDrained waits until every item of batch put is delivered (acked, at
// least once), or the run stalls.
func (sr *slowRun) waitDrained(ctx context.Context, batch string) {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		sr.mu.Lock()
		left := 0
		for item := range sr.put {
			if item[0] == batch[0] && sr.delivered[item] == 0 || sr.ack && item[0] == batch[0] && sr.acked[item] == 0 {
				left++
			}
		}
		unsure := sr.uncertain
		sr.mu.Unlock()
		if left == 0 || left <= unsure && batch == "a" {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			sr.r.Stall("%d items of batch %s not consumed after 10 minutes", left, batch)
		}
		time.Sleep(100 * time.Millisecond) // virtual: a check, not a synchronisation of the processes
	}
}

// consume is consumer who's loop until ctx ends: the slow one works
// slowWork on each item before it acks (or takes the next).
func (sr *slowRun) consume(ctx context.Context, who int, slow bool) {
	w := sr.r.Session(who)
	for ctx.Err() == nil {
		s, err := w.Get(ctx)
		if err != nil {
			continue
		}
		began := time.Now()
		v, d, err := sr.q.take(ctx, s)
		took := time.Since(began)
		sr.timed(who, slow, began)
		if v == "" {
			if errors.Is(err, runtime.ErrTakeUncertain) {
				sr.mu.Lock()
				sr.uncertain++
				sr.mu.Unlock()
			}
			continue
		}
		sr.r.Event(who, "took %s after %v (err %v)", v, took, err)
		sr.took(v, err)
		if slow {
			time.Sleep(slowWork)
		}
		if d != nil {
			aerr := d.Ack(context.WithoutCancel(ctx))
			sr.r.Event(who, "ack %s: %v", v, aerr)
			sr.mu.Lock()
			switch {
			case aerr == nil:
				sr.acked[v]++
			case !errors.Is(aerr, runtime.ErrClaimLost):
				sr.uncertain++ // consumed, or to be delivered again
			}
			sr.mu.Unlock()
		}
	}
}

// took records a delivery.
func (sr *slowRun) took(v string, err error) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.delivered[v]++
	if _, ok := sr.takenAt[v]; !ok {
		sr.takenAt[v] = time.Now()
	}
	if errors.Is(err, runtime.ErrTakeUncertain) {
		sr.uncertain++
	}
}

// timed records a fast consumer's take begun at began, once the second
// batch is in.
func (sr *slowRun) timed(who int, slow bool, began time.Time) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if !slow && !sr.from.IsZero() && !began.Before(sr.from) {
		sr.waits = append(sr.waits, slowWait{who, began, time.Now()})
	}
}

// checkWaits reports each timed take that waited past the bound while two
// items or more were still queued (taken by no one yet): one may be the
// slow consumer's next, in the instant it takes it.
func (sr *slowRun) checkWaits() {
	bound := runtime.ChunkWait + time.Second
	for _, w := range sr.waits {
		at := w.began.Add(bound)
		if w.end.Sub(w.began) <= bound {
			continue
		}
		queued := 0
		for _, t := range sr.takenAt {
			if t.After(at) {
				queued++
			}
		}
		if queued >= 2 {
			sr.r.Violate("no consumer idles behind a slow one", "consumer %d waited from %s to %s with %d items still queued %v after it began",
				w.who, sr.r.Since(w.began), sr.r.Since(w.end), queued, bound)
		}
	}
}

// check verifies what was delivered.
func (sr *slowRun) check() {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.checkWaits()
	dups := 0
	for item, n := range sr.delivered {
		if !sr.ack && n > 1 {
			dups++
			sr.r.Violate("at-most-once: never twice", "%s delivered %d times", item, n)
		}
	}
	for item := range sr.put {
		if sr.ack && sr.acked[item] > 1 {
			sr.r.Violate("at-least-once: acked once", "%s acked %d times", item, sr.acked[item])
		}
	}
	sr.r.Logf("%d put, %d delivered, %d acked, %d uncertain", len(sr.put), len(sr.delivered), len(sr.acked), sr.uncertain)
}
