package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
)

// The examples run against the ZooKeeper that TestMain starts for the
// package (main_test.go). In them, servers() is its address, session() a
// session on it (see ExampleConnect) and app a path of their own on it; an
// application takes the first and the last from its configuration.

var app = fmt.Sprintf("/zkgen-examples/%d-%d", os.Getpid(), time.Now().UnixNano())

// servers returns the address of the examples' ZooKeeper.
func servers() []string {
	if shared == nil {
		panic(fmt.Sprint("the examples have no ZooKeeper: ", sharedErr))
	}
	return shared.Servers()
}

// session connects to the examples' ZooKeeper, as ExampleConnect does.
func session() *runtime.Session {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := runtime.Connect(ctx, servers())
	if err != nil {
		panic(err)
	}
	return s
}

// A session lasts until it is closed or expires; every handle built on it
// ends with it, and it is never reopened behind the application's back.
func ExampleConnect() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, err := runtime.Connect(ctx, servers(), runtime.WithSessionTimeout(5*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("connected:", sess.ID() != 0)

	sess.Close()
	<-sess.Done()
	fmt.Println("ended:", sess.Err())
	// Output:
	// connected: true
	// ended: session: closed
}

// Supervise runs the work on a session, and again on a new session each
// time one ends, until ctx ends or the work is done (it returns nil).
func ExampleSupervise() {
	ctx := context.Background()
	err := runtime.Supervise(ctx, servers(), func(ctx context.Context, s *runtime.Session) error {
		// ctx ends with s: long-running work (Lock.Do, Election.Run,
		// Group.Stay, AckQueue.Consume) returns, and runs again on the
		// next session.
		n, err := runtime.NewCounter(s, runtime.At(app+"/counters/starts")).Add(ctx, 1)
		fmt.Println("starts:", n)
		return err
	}, runtime.WithSessionEvents(func(ev runtime.SessionEvent) {
		fmt.Println("session", ev.Generation)
	}))
	fmt.Println("done:", err)
	// Output:
	// session 1
	// starts: 1
	// done: <nil>
}

// A Path is built from a base and typed segments; a string parameter that
// could escape its place in the tree makes the path invalid, and every
// handle built on it returns the error without sending anything.
func ExamplePath_Str() {
	p := runtime.At("/app/locks/tables").Str("table", "users")
	fmt.Println(p)
	bad := runtime.At("/app/locks/tables").Str("table", "../etc")
	fmt.Println(bad.Err())
	// Output:
	// /app/locks/tables/users
	// path: invalid parameter: table "../etc" under /app/locks/tables: contains "/"
}

// Two contenders for one lock, each on its own session (in two processes,
// typically): while a holds the lock, b cannot take it; after a's Unlock it
// can, with a greater fencing token.
func ExampleLock() {
	ctx := context.Background()
	sa, sb := session(), session()
	defer sa.Close()
	defer sb.Close()
	shard := runtime.At(app+"/locks/orders").Int("shard", 7)
	a, b := runtime.NewLock(sa, shard), runtime.NewLock(sb, shard)

	if err := a.Lock(ctx); err != nil { // blocks until held
		log.Fatal(err)
	}
	ok, err := b.TryLock(ctx) // never waits
	fmt.Println("b while a holds it:", ok, err)

	first := a.Token()
	if err := a.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	ok, err = b.TryLock(ctx)
	fmt.Println("b after a's Unlock:", ok, err)
	fmt.Println("token grew:", b.Token() > first)
	b.Unlock(ctx)
	// Output:
	// b while a holds it: false <nil>
	// b after a's Unlock: true <nil>
	// token grew: true
}

// Do holds the lock while the function runs: its ctx ends if the lock is
// lost meanwhile (session expired, node reaped), and the lock is released
// when it returns.
func ExampleLock_Do() {
	sess := session()
	defer sess.Close()
	l := runtime.NewLock(sess, runtime.At(app+"/locks/reports"))

	err := l.Do(context.Background(), func(ctx context.Context) error {
		fmt.Println("held, with a fencing token:", l.Token() > 0)
		return nil // pass l.Token() to the storage written to, to fence it
	})
	fmt.Println("released:", err)
	// Output:
	// held, with a fencing token: true
	// released: <nil>
}

// Guarded writes only while the lock is held, atomically with a check of
// the holder's node: a holder that lost the lock without noticing yet
// cannot write.
func ExampleLock_Guarded() {
	ctx := context.Background()
	sess := session()
	defer sess.Close()
	if _, err := sess.CreatePersistent(ctx, app+"/ledger"); err != nil {
		log.Fatal(err)
	}
	l := runtime.NewLock(sess, runtime.At(app+"/locks/ledger"))
	if err := l.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	entry := &zk.CreateRequest{Path: app + "/ledger/entry-1", Data: []byte("42"), Acl: runtime.WorldAllACL()}
	_, err := l.Guarded(ctx, entry)
	fmt.Println("while held:", err)

	l.Unlock(ctx)
	_, err = l.Guarded(ctx, &zk.SetDataRequest{Path: entry.Path, Data: []byte("43"), Version: -1})
	fmt.Println("after Unlock:", errors.Is(err, runtime.ErrNotHeld))
	// Output:
	// while held: <nil>
	// after Unlock: true
}

// Readers share a read/write lock; a writer excludes them and is excluded
// by them.
func ExampleRWLock() {
	ctx := context.Background()
	sess := session()
	defer sess.Close()
	rw := runtime.NewRWLock(sess, runtime.At(app+"/locks/tables").Str("table", "users"))

	r1, r2 := rw.Read(), rw.Read()
	for _, r := range []runtime.LockHandle{r1, r2} {
		if err := r.Lock(ctx); err != nil {
			log.Fatal(err)
		}
	}
	w := rw.Write()
	ok, _ := w.TryLock(ctx)
	fmt.Println("writer with two readers in:", ok)

	r1.Unlock(ctx)
	r2.Unlock(ctx)
	ok, _ = w.TryLock(ctx)
	fmt.Println("writer alone:", ok)
	w.Unlock(ctx)
	// Output:
	// writer with two readers in: false
	// writer alone: true
}

// A semaphore hands out at most its number of leases at once; an Acquire
// beyond them waits for a Release. A Semaphore handle is one participant,
// holding one lease at a time.
func ExampleSemaphore() {
	ctx := context.Background()
	sess := session()
	defer sess.Close()
	slots := runtime.At(app + "/semaphores/slots")
	participant := func() *runtime.Semaphore { return runtime.NewSemaphore(sess, slots, 2) }

	a, err := participant().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	b, err := participant().Acquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	holders, _ := participant().Holders(ctx)
	fmt.Println("leases held:", len(holders))

	third := make(chan *runtime.Lease)
	go func() {
		le, err := participant().Acquire(ctx) // waits: both leases are taken
		if err != nil {
			log.Fatal(err)
		}
		third <- le
	}()
	a.Release(ctx)
	c := <-third
	fmt.Println("third acquired after a release")
	b.Release(ctx)
	c.Release(ctx)
	// Output:
	// leases held: 2
	// third acquired after a release
}

// A FIFO queue delivers each item at most once, in the order put.
func ExampleQueue() {
	ctx := context.Background()
	sess := session()
	defer sess.Close()
	q := runtime.NewQueue(sess, runtime.At(app+"/queues/jobs"), runtime.StringCodec())

	if err := q.Put(ctx, "resize"); err != nil {
		log.Fatal(err)
	}
	if _, err := q.PutAll(ctx, []string{"thumbnail", "notify"}); err != nil {
		log.Fatal(err)
	}
	n, _ := q.Len(ctx)
	fmt.Println("queued:", n)

	first, err := q.Take(ctx) // blocks until there is an item
	if err != nil {
		log.Fatal(err)
	}
	rest, err := q.TakeN(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(first, rest)
	// Output:
	// queued: 3
	// resize [thumbnail notify]
}

// A delay queue hands an item out only once its due time has passed, by
// the consumer's clock, earliest due first: Take waits on a timer and a
// watch until then.
func ExampleDelayQueue() {
	ctx := context.Background()
	sess := session()
	defer sess.Close()
	q := runtime.NewDelayQueue(sess, runtime.At(app+"/queues/retries"), runtime.StringCodec())

	now := time.Now()
	due := map[string]time.Time{
		"retry upload": now.Add(200 * time.Millisecond),
		"retry email":  now.Add(-time.Second), // due already
	}
	for item, at := range due {
		if err := q.Put(ctx, item, at); err != nil {
			log.Fatal(err)
		}
	}
	for range due {
		item, err := q.Take(ctx) // blocks until the earliest item is due
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(item, "- taken after its due time:", !time.Now().Before(due[item]))
	}
	// Output:
	// retry email - taken after its due time: true
	// retry upload - taken after its due time: true
}

// An at-least-once queue delivers an item until it is acked: a released
// item (or one whose consumer's session ended) is delivered again.
func ExampleAckQueue() {
	ctx := context.Background()
	sess := session()
	defer sess.Close()
	q := runtime.NewAckQueue(sess, runtime.At(app+"/queues/emails"), runtime.StringCodec())

	if err := q.Put(ctx, "welcome alice"); err != nil {
		log.Fatal(err)
	}
	d, err := q.Take(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("delivered:", d.Value)
	d.Release(ctx) // could not send it: give it back

	d, err = q.Take(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("delivered again:", d.Value)
	d.Ack(ctx) // sent: the item is consumed
	n, _ := q.Len(ctx)
	fmt.Println("left:", n)
	// Output:
	// delivered: welcome alice
	// delivered again: welcome alice
	// left: 0
}

// Consume runs a function on each item until ctx ends: it acks the item
// when the function returns nil and releases it, to be delivered again
// after a backoff, when it fails (GiveBack: again at once, uncounted).
func ExampleAckQueue_Consume() {
	sess := session()
	defer sess.Close()
	q := runtime.NewAckQueue(sess, runtime.At(app+"/queues/invoices"), runtime.StringCodec())
	if _, err := q.PutAll(context.Background(), []string{"inv-1", "inv-2", "inv-3"}); err != nil {
		log.Fatal(err)
	}

	ctx, stop := context.WithCancel(context.Background())
	done := 0
	err := q.Consume(ctx, func(ctx context.Context, invoice string) error {
		fmt.Println("sending", invoice)
		if done++; done == 3 {
			stop() // this item is still acked
		}
		return nil
	})
	fmt.Println("stopped:", err)
	n, _ := q.Len(context.Background())
	fmt.Println("left:", n)
	// Output:
	// sending inv-1
	// sending inv-2
	// sending inv-3
	// stopped: <nil>
	// left: 0
}

// A priority queue serves lower priority numbers first, FIFO within one.
func ExamplePriorityQueue() {
	ctx := context.Background()
	sess := session()
	defer sess.Close()
	const urgent, normal, bulk runtime.Priority = 0, 1, 2
	q := runtime.NewPriorityQueue(sess, runtime.At(app+"/queues/tasks"), runtime.StringCodec(), 3)

	q.Put(ctx, bulk, "reindex")
	q.Put(ctx, normal, "email")
	q.Put(ctx, urgent, "page on-call")
	q.Put(ctx, normal, "invoice")
	items, err := q.TakeN(ctx, 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", items)
	// Output:
	// ["page on-call" "email" "invoice" "reindex"]
}

// The at-least-once priority queue hands out Deliveries, most urgent
// first; Consume works as for AckQueue.
func ExampleAckPriorityQueue() {
	ctx := context.Background()
	sess := session()
	defer sess.Close()
	const urgent, normal runtime.Priority = 0, 1
	q := runtime.NewAckPriorityQueue(sess, runtime.At(app+"/queues/alerts"), runtime.StringCodec(), 2)

	q.Put(ctx, normal, "disk 80% full")
	q.Put(ctx, urgent, "disk full")
	for range 2 {
		d, err := q.Take(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d.Value)
		d.Ack(ctx)
	}
	// Output:
	// disk full
	// disk 80% full
}

// A barrier holds everyone who Waits on it from Raise to Lower.
func ExampleBarrier() {
	ctx := context.Background()
	sa, sb := session(), session()
	defer sa.Close()
	defer sb.Close()
	p := runtime.At(app+"/barriers/start").Str("run", "run-1")

	b := runtime.NewBarrier(sa, p)
	if err := b.Raise(ctx); err != nil {
		log.Fatal(err)
	}
	released := make(chan error)
	go func() { released <- runtime.NewBarrier(sb, p).Wait(ctx) }()

	up, _ := b.Raised(ctx)
	fmt.Println("raised:", up)
	b.Lower(ctx)
	fmt.Println("waiter released:", <-released)
	// Output:
	// raised: true
	// waiter released: <nil>
}

// Participants of a double barrier go through Enter together, once all
// have arrived, and out of Leave together.
func ExampleDoubleBarrier() {
	ctx := context.Background()
	sess := session()
	defer sess.Close()
	round := runtime.At(app+"/barriers/epoch").Int("n", 1) // a fresh path per round

	var arrived, sawAll atomic.Int64
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			d := runtime.NewDoubleBarrier(sess, round, 3)
			arrived.Add(1)
			if err := d.Enter(ctx); err != nil {
				log.Fatal(err)
			}
			if arrived.Load() == 3 {
				sawAll.Add(1)
			}
			// ... the round's work ...
			if err := d.Leave(ctx); err != nil {
				log.Fatal(err)
			}
		})
	}
	wg.Wait()
	fmt.Println("participants that entered after all had arrived:", sawAll.Load())
	// Output:
	// participants that entered after all had arrived: 3
}

// Two candidates: b takes over when a resigns (or when a's session ends),
// with a greater epoch, the fencing token of a leadership.
func ExampleElection() {
	ctx := context.Background()
	sa, sb := session(), session()
	defer sa.Close()
	defer sb.Close()
	p := runtime.At(app + "/election/scheduler")
	a := runtime.NewElection(sa, p, runtime.StringCodec())
	b := runtime.NewElection(sb, p, runtime.StringCodec())

	la, err := a.Campaign(ctx, "scheduler-a") // blocks until elected
	if err != nil {
		log.Fatal(err)
	}
	leader, _ := b.Leader(ctx)
	fmt.Println("leader:", leader)

	next := make(chan *runtime.Leadership[string])
	go func() {
		l, err := b.Campaign(ctx, "scheduler-b")
		if err != nil {
			log.Fatal(err)
		}
		next <- l
	}()
	la.Resign(ctx)
	lb := <-next
	fmt.Println("leader:", lb.Payload(), "epoch grew:", lb.Epoch() > la.Epoch())
	lb.Resign(ctx)
	// Output:
	// leader: scheduler-a
	// leader: scheduler-b epoch grew: true
}

// Run campaigns, runs the function while leader (its ctx ends if the
// leadership is lost), and campaigns again when it returns, until ctx ends.
func ExampleElection_Run() {
	sess := session()
	defer sess.Close()
	e := runtime.NewElection(sess, runtime.At(app+"/election/compactor"), runtime.StringCodec())

	ctx, stop := context.WithCancel(context.Background())
	err := e.Run(ctx, "compactor-1", func(ctx context.Context, l *runtime.Leadership[string]) error {
		fmt.Println("leading as", l.Payload())
		stop() // done for good; returning nil alone would campaign again
		return nil
	})
	fmt.Println("stopped:", err)
	// Output:
	// leading as compactor-1
	// stopped: <nil>
}

// Members join a group with a payload, and Members lists them in join
// order (Watch would stream the list after every change).
func ExampleGroup() {
	type member struct {
		Host string `json:"host"`
		Port int    `json:"port"`
	}
	ctx := context.Background()
	sa, sb := session(), session()
	defer sa.Close()
	defer sb.Close()
	p := runtime.At(app + "/groups/workers")
	g := runtime.NewGroup(sa, p, runtime.JSONCodec[member]())

	if _, err := g.Join(ctx, member{"10.0.0.1", 8080}); err != nil {
		log.Fatal(err)
	}
	mb, err := runtime.NewGroup(sb, p, runtime.JSONCodec[member]()).Join(ctx, member{"10.0.0.2", 8080})
	if err != nil {
		log.Fatal(err)
	}
	ms, _ := g.Members(ctx)
	fmt.Println(ms)

	mb.Leave(ctx) // or b's session ends
	ms, _ = g.Members(ctx)
	fmt.Println(ms)
	// Output:
	// [{10.0.0.1 8080} {10.0.0.2 8080}]
	// [{10.0.0.1 8080}]
}

// A config is one typed value; CompareAndSet refuses to overwrite a change
// made since the version read.
func ExampleConfig() {
	type flags struct {
		DarkMode bool `json:"dark_mode"`
		MaxBatch int  `json:"max_batch"`
	}
	ctx := context.Background()
	sess := session()
	defer sess.Close()
	c := runtime.NewConfig(sess, runtime.At(app+"/config/flags"), runtime.JSONCodec[flags]())

	_, _, err := c.Get(ctx)
	fmt.Println("before any Set:", errors.Is(err, runtime.ErrNoValue))
	v1, err := c.Set(ctx, flags{MaxBatch: 10})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.CompareAndSet(ctx, flags{DarkMode: true, MaxBatch: 20}, v1); err != nil {
		log.Fatal(err)
	}
	_, err = c.CompareAndSet(ctx, flags{MaxBatch: 30}, v1) // v1 is stale now
	fmt.Println("stale:", errors.Is(err, runtime.ErrVersionConflict))

	f, _, err := c.Get(ctx)
	fmt.Printf("%+v %v\n", f, err)
	// Output:
	// before any Set: true
	// stale: true
	// {DarkMode:true MaxBatch:20} <nil>
}

// A config as a name service: Watch delivers the node's state now and
// after every change, deletion included; a slow reader gets the newest
// state.
func ExampleConfig_Watch() {
	ctx, stop := context.WithCancel(context.Background())
	defer stop() // ends the watch
	sess := session()
	defer sess.Close()
	billing := runtime.NewConfig(sess, runtime.At(app+"/services").Str("name", "billing"), runtime.StringCodec())

	w := billing.Watch(ctx)
	fmt.Println("registered:", (<-w).Exists)
	billing.Set(ctx, "10.0.0.7:9000")
	for v := range w {
		if v.Exists {
			fmt.Println("billing is at", v.Value)
			break
		}
	}
	billing.Delete(ctx)
	for v := range w {
		if !v.Exists {
			fmt.Println("billing is gone")
			break
		}
	}
	// Output:
	// registered: false
	// billing is at 10.0.0.7:9000
	// billing is gone
}

// A counter is a shared int64 (Curator's DistributedAtomicLong format).
func ExampleCounter() {
	ctx := context.Background()
	sess := session()
	defer sess.Close()
	k := runtime.NewCounter(sess, runtime.At(app+"/counters/visits"))

	k.Add(ctx, 5)
	n, err := k.Add(ctx, -2)
	fmt.Println(n, err)
	// Output:
	// 3 <nil>
}

// A two-phase commit: the coordinator proposes, each participant joins
// (a participant whose session ends before voting aborts the transaction)
// and votes; every Outcome is the same decision.
func ExampleTwoPhaseCommit() {
	ctx := context.Background()
	sc, sp := session(), session()
	defer sc.Close()
	defer sp.Close()
	parts := []runtime.Participant{"database", "cache"}
	tx := runtime.At(app+"/tx/deploy").Str("id", "v42")

	coord := runtime.NewTwoPhaseCommit(sc, tx, runtime.StringCodec(), parts)
	if err := coord.ProposeWith(ctx, "release v42"); err != nil {
		log.Fatal(err)
	}
	for _, p := range parts { // in each participant's process
		h := runtime.NewTwoPhaseCommit(sp, tx, runtime.StringCodec(), parts)
		if err := h.Join(ctx, p); err != nil {
			log.Fatal(err)
		}
		what, _ := h.Payload(ctx)
		fmt.Println(p, "prepares", what)
		if err := h.Vote(ctx, p, runtime.Commit); err != nil {
			log.Fatal(err)
		}
	}
	d, err := coord.Outcome(ctx) // blocks until decided
	fmt.Println("outcome:", d, err)
	coord.Remove(ctx)
	// Output:
	// database prepares release v42
	// cache prepares release v42
	// outcome: commit <nil>
}
