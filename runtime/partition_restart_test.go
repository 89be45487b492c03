package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A rolling restart of a 3-server ensemble (every member restarted in
// turn, followers first, the leader last) in the middle of a contended lock
// run and of a queue run. Every client knows all three servers and has a
// session timeout of 30s, which outlasts a restart and an election: every
// session must survive. The lock's tenures, recorded from Lock's return to
// Unlock's call on one clock, must not overlap, and their fencing tokens
// must grow from each tenure to the next; every item put on the
// at-most-once and the at-least-once queue must be consumed exactly once
// (taken once; delivered and acked once), with no put or take of uncertain
// outcome. At the end nothing is left: no lock node, no item, claim or
// marker.
func TestRollingRestartLockAndQueues(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	e := zktest.StartEnsemble(t, 3, zktest.WithQuorumFaults())
	ctx := testCtx(t, 3*time.Minute)
	root := testRoot(t)
	clk := newClock()
	// A leader election after a restart can take ZooKeeper 3.8 well over
	// ten seconds on a loaded machine; the sessions must outlive it (they
	// give up at 35% of the timeout: 21s).
	const sessionTimeout = 60 * time.Second
	const (
		contenders = 4
		phase      = 40 // lock cycles and items consumed before and after the restart
		backlog    = 20
		bucket     = 8
	)

	// The lock run.
	lockDir := root + "/lock"
	type tenure struct {
		who        int
		start, end time.Duration // Lock returned, Unlock called
		token      int64
	}
	var (
		lmu     sync.Mutex
		tenures []tenure
		retries = map[string]int{}
	)
	lockProgress := make(chan struct{}, 1<<16)
	stopLocks := make(chan struct{})
	var lwg sync.WaitGroup
	var lockSessions []*runtime.Session
	lockDrops := make([]disconnects, contenders)
	for i := range contenders {
		lockDrops[i] = newDisconnects()
		s := connect(t, e.Servers(), runtime.WithSessionTimeout(sessionTimeout), lockDrops[i].option())
		lockSessions = append(lockSessions, s)
		l := runtime.NewLock(s, runtime.At(lockDir))
		retry := func(what string, err error) {
			lmu.Lock()
			retries[what+": "+errClass(err)]++
			lmu.Unlock()
		}
		lwg.Add(1)
		go func() {
			defer lwg.Done()
			for {
				select {
				case <-stopLocks:
					return
				default:
				}
				if err := l.Lock(ctx); err != nil {
					if errors.Is(err, runtime.ErrSessionExpired) || ctx.Err() != nil {
						t.Errorf("contender %d: Lock: %v", i, err)
						return
					}
					retry("lock", err) // recoverable trouble during a restart: again
					continue
				}
				tn := tenure{who: i, start: clk.now(), token: l.Token()}
				// The tenure: one fenced (empty) write, a round trip.
				if _, err := l.Guarded(ctx); errors.Is(err, runtime.ErrLockLost) {
					t.Errorf("contender %d: Guarded: %v", i, err)
					return
				}
				tn.end = clk.now()
				for {
					err := l.Unlock(ctx)
					if err == nil || errors.Is(err, runtime.ErrNotHeld) {
						break // ErrNotHeld: a retried Unlock whose first attempt went through
					}
					if errors.Is(err, runtime.ErrLockLost) || ctx.Err() != nil {
						t.Errorf("contender %d: Unlock: %v", i, err)
						return
					}
					retry("unlock", err)
				}
				lmu.Lock()
				tenures = append(tenures, tn)
				lmu.Unlock()
				lockProgress <- struct{}{}
			}
		}()
	}

	// The queue run: on each queue two producers and two consumers.
	run := &queueRun{fleet: newFleet(t, ctx), progress: make(chan struct{}, 1<<16), stop: make(chan struct{})}
	run.anyTimeout = sessionTimeout
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
		for k := range 2 {
			pw := run.client(fmt.Sprintf("%s-p%d", name, k), e, -1)
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
			cw := run.client(fmt.Sprintf("%s-c%d", name, k), e, -1)
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

	wait := func(ch <-chan struct{}, n int, what string) {
		t.Helper()
		for i := 0; i < n; i++ {
			select {
			case <-ch:
			case <-ctx.Done():
				t.Fatalf("%s: stalled after %d of %d", what, i, n)
			}
		}
	}
	wait(lockProgress, phase, "lock cycles before the restart")
	wait(run.progress, phase, "items before the restart")
	from := clk.now()
	leader, err := e.RollingRestart(settleQuorum)
	if err != nil {
		t.Fatal(err)
	}
	to := clk.now()
	t.Logf("rolling restart from %v to %v; member %d leads", from, to, leader)
	wait(lockProgress, phase, "lock cycles after the restart")
	wait(run.progress, phase, "items after the restart")

	close(stopLocks)
	lwg.Wait()
	close(run.stop)
	pwg.Wait()
	stopConsumers()
	cwg.Wait()
	// Every member was restarted, so every client lost its server at least
	// once, and every session survived.
	for i, s := range lockSessions {
		if err := s.Err(); err != nil {
			t.Errorf("lock contender %d's session did not survive: %v", i, err)
		}
		if lockDrops[i].count() == 0 {
			t.Errorf("lock contender %d never lost its connection, though every member was restarted", i)
		}
	}
	if n, who := run.fewestDrops(); n == 0 {
		t.Errorf("%s never lost its connection, though every member was restarted", who)
	} else {
		t.Logf("every client lost its connection at least once (queue clients: %s at least, %d times)", who, n)
	}
	if n := run.expired(); n > 0 || run.opened() != 4*len(run.ledgers) {
		t.Errorf("queue clients: %d sessions opened for %d clients, %d expired", run.opened(), 4*len(run.ledgers), n)
	}

	// The lock's tenures, in the order they started.
	lmu.Lock()
	slices.SortFunc(tenures, func(a, b tenure) int { return int(a.start - b.start) })
	during := 0
	for i, tn := range tenures {
		if tn.start >= from && tn.start < to {
			during++
		}
		if i == 0 {
			continue
		}
		prev := tenures[i-1]
		if tn.start < prev.end {
			t.Errorf("tenures overlap: contender %d [%v, %v) token %d, contender %d from %v token %d", prev.who, prev.start, prev.end, prev.token, tn.who, tn.start, tn.token)
		}
		if tn.token <= prev.token {
			t.Errorf("contender %d's token %d (from %v) is not above %d of contender %d before it", tn.who, tn.token, tn.start, prev.token, prev.who)
		}
	}
	t.Logf("%d tenures, %d of them during the restart; retried calls %v", len(tenures), during, retries)
	lmu.Unlock()

	// Drain the queues on a session of their own, then check the ledgers.
	run.closeAll()
	drain := connect(t, e.Servers(), runtime.WithSessionTimeout(sessionTimeout))
	for _, l := range run.ledgers {
		if err := l.drain(ctx, drain, runtime.At(root).Lit(l.name), codec, qopt); err != nil {
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
		l.exactlyOnce()
	}
	if t.Failed() {
		return
	}
	for _, s := range lockSessions {
		s.Close()
	}
	check := connect(t, e.Servers())
	if kids := childrenOf(t, check, lockDir); len(kids) != 0 {
		t.Errorf("left in the lock's directory: %v", kids)
	}
	for _, l := range run.ledgers {
		requireQueueEmpty(t, check, root+"/"+l.name, owner)
	}
}
