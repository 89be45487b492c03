package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Chaos configures StartChaos.
type Chaos struct {
	Seed   uint64 // the schedule's draws
	Events int    // how many faults, a second or three apart
	// Faults, if set, names the faults drawn from (ChaosFaults), each as
	// likely as the others. Unset: all of them on an ensemble, a session
	// cut twice as likely as each other one; on one server, session cuts.
	// A fault of servers is never drawn on one server.
	Faults []string
	// Spare, if set, names sessions the chaos must leave alone: never cut
	// off, nor let through again if the test cut them off itself (a
	// crashed process's session stays dead).
	Spare func(id int64) bool
	// Log, if set, is told each fault as it happens, from one goroutine.
	Log func(what string)
}

// chaosFaults are the faults StartChaos draws, by name (see ChaosFaults).
var chaosFaults = []string{"session-cut", "server-lag", "server-cut", "election", "replace", "rolling", "minority"}

// ensembleMix is the default draw on an ensemble (Chaos.Faults unset).
var ensembleMix = []string{"server-lag", "server-cut", "election", "session-cut", "session-cut", "replace", "rolling"}

// ChaosFaults returns the names of the faults StartChaos draws from:
//
//	session-cut  a live session cut off for 0.3 to 2 of its session
//	             timeouts (Isolate: the longer cuts expire it on the
//	             server's clock while its client counts on its own)
//	server-lag   a server applies what is committed up to 300 ms late (SetDelay)
//	server-cut   a server cut off for 1 to 4 s (IsolateServer: its clients move)
//	election     a leader election of 0.2 to 3 s (ChangeLeader)
//	replace      a server leaves and joins again 1 to 6 s later at a new
//	             address (LeaveServer, JoinServer: clients that know it by
//	             name follow it); server 0, the leader, with an election
//	             of 0.2 to 1 s
//	rolling      every server replaced in turn, the last first and the
//	             leader last, each 1 to 2 s after the one before joined
//	             again (one that left already is passed over)
//	minority     a follower cut off together with its clients for 1 to 2
//	             of their session timeouts, as a network partition with
//	             them on the minority side: the follower stops serving and
//	             its clients reach no other server, so the majority
//	             expires their sessions on the leader's clock, which has
//	             not heard what the follower had yet to report (see
//	             Server.heard). Not in the default mix: name it.
//
// All but session-cut are faults of an ensemble.
func ChaosFaults() []string { return slices.Clone(chaosFaults) }

// StartChaos runs a random schedule of session and server faults drawn
// from c.Seed (the request faults are WithRandomFaults'): c.Events times,
// 0.5 to 3 s apart, one of c.Faults (see ChaosFaults); a rolling
// replacement holds the next event back until it is over. Servers cut off
// or left count against the quorum (see LeaveServer). The draws depend on
// the seed and on the live sessions and servers at each event. It panics
// on a name ChaosFaults does not list. stop ends the schedule, lets
// through every session and server it cut off, brings back every server
// that left, returns the servers to no delay, and waits for the
// schedule's goroutine and any election it began.
func (s *Server) StartChaos(c Chaos) (stop func()) {
	ch := newChaos(s, c)
	go ch.run(c.Events)
	var once sync.Once
	return func() {
		once.Do(func() { close(ch.calmed) })
		<-ch.done
		for i := range ch.n {
			s.SetDelay(i, 0)
		}
	}
}

// chaos is one StartChaos schedule; its methods run on its goroutine.
type chaos struct {
	s            *Server
	n            int // servers
	rng          *rand.Rand
	mix          []string // the faults drawn from
	log          func(string)
	spare        func(int64) bool
	calmed, done chan struct{}
	undo         []func()            // run at stop: let through, join again
	cutUntil     map[int64]time.Time // sessions cut off, and until when
}

func newChaos(s *Server, c Chaos) *chaos {
	ch := &chaos{s: s, n: len(s.Servers()), rng: rand.New(rand.NewPCG(c.Seed, 0xc4a05)), log: c.Log, spare: c.Spare,
		calmed: make(chan struct{}), done: make(chan struct{}), cutUntil: map[int64]time.Time{}}
	if ch.log == nil {
		ch.log = func(string) {}
	}
	if ch.spare == nil {
		ch.spare = func(int64) bool { return false }
	}
	mix := c.Faults
	if len(mix) == 0 {
		mix = ensembleMix
	}
	for _, f := range mix {
		if !slices.Contains(chaosFaults, f) {
			panic(fmt.Sprintf("sim: no chaos fault %q (there are %v)", f, chaosFaults))
		}
		if ch.n > 1 || f == "session-cut" {
			ch.mix = append(ch.mix, f)
		}
	}
	return ch
}

// run draws the events; once calmed, it undoes what is left undone.
func (ch *chaos) run(events int) {
	defer close(ch.done)
	defer func() {
		<-ch.calmed // what is cut off stays so until stop
		for _, u := range ch.undo {
			u()
		}
	}()
	for range events {
		if !ch.pause(time.Duration(500+ch.rng.IntN(2500)) * time.Millisecond) {
			return
		}
		if len(ch.mix) > 0 {
			ch.fault(ch.mix[ch.rng.IntN(len(ch.mix))])
		}
	}
}

// pause waits d, or until stop, then for its step (WithSteps): it
// reports whether the schedule goes on.
func (ch *chaos) pause(d time.Duration) bool {
	select {
	case <-ch.calmed:
		return false
	case <-time.After(d):
		return ch.s.turn(keyTimer + "chaos")
	}
}

func (ch *chaos) fault(name string) {
	switch name {
	case "session-cut":
		ch.sessionCut()
	case "server-lag":
		i, d := ch.rng.IntN(ch.n), time.Duration(ch.rng.IntN(300))*time.Millisecond
		ch.s.SetDelay(i, d)
		ch.log(fmt.Sprintf("chaos: server %d lags %v", i, d))
	case "server-cut":
		ch.serverCut()
	case "election":
		ch.election(3000)
	case "replace":
		ch.replace(ch.presentServer())
	case "rolling":
		ch.rolling()
	case "minority":
		ch.minority()
	}
}

// minority cuts a follower off with the sessions connected to it, for 1
// to 2 of their longest session timeout.
func (ch *chaos) minority() {
	i := 1 + ch.rng.IntN(ch.n-1)
	var ids []int64
	longest := ch.s.cfg.minSession
	for _, id := range ch.s.sessionsOn(i) {
		if !ch.spare(id) && !time.Now().Before(ch.cutUntil[id]) {
			ids = append(ids, id)
			longest = max(longest, ch.s.sessionTimeout(id))
		}
	}
	d := time.Duration(float64(longest) * (1 + ch.rng.Float64()))
	for _, id := range ids {
		ch.s.Isolate(id, true)
		ch.cutUntil[id] = time.Now().Add(d)
	}
	ch.s.IsolateServer(i, true)
	ch.log(fmt.Sprintf("chaos: server %d cut off with its sessions %x for %v", i, ids, d.Round(time.Millisecond)))
	ch.later(d, fmt.Sprintf("server %d and its sessions back", i), func() {
		ch.s.IsolateServer(i, false)
		for _, id := range ids {
			if !ch.spare(id) {
				ch.s.Isolate(id, false)
			}
		}
	})
}

// sessionCut cuts a live session off for 0.3 to 2 of its timeouts.
func (ch *chaos) sessionCut() {
	var ids []int64
	for _, id := range ch.s.Sessions() {
		if !time.Now().Before(ch.cutUntil[id]) && !ch.spare(id) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	id := ids[ch.rng.IntN(len(ids))]
	d := time.Duration(float64(ch.s.sessionTimeout(id)) * (0.3 + 1.7*ch.rng.Float64()))
	ch.s.Isolate(id, true)
	ch.cutUntil[id] = time.Now().Add(d)
	ch.log(fmt.Sprintf("chaos: session %x cut off for %v", id, d.Round(time.Millisecond)))
	letThrough := func() {
		if !ch.spare(id) {
			ch.s.Isolate(id, false)
		}
	}
	ch.later(d, fmt.Sprintf("session %x back", id), letThrough)
}

// serverCut cuts a server off for 1 to 4 s.
func (ch *chaos) serverCut() {
	i := ch.rng.IntN(ch.n)
	ch.s.IsolateServer(i, true)
	ch.log(fmt.Sprintf("chaos: server %d cut off", i))
	d := time.Duration(1000+ch.rng.IntN(3000)) * time.Millisecond
	ch.later(d, fmt.Sprintf("server %d back", i), func() { ch.s.IsolateServer(i, false) })
}

// election holds a leader election of 0.2 s to upTo ms.
func (ch *chaos) election(upTo int) {
	d := time.Duration(200+ch.rng.IntN(upTo-200)) * time.Millisecond
	ch.s.ChangeLeader(d)
	ch.log(fmt.Sprintf("chaos: leader election, nobody serves for %v", d))
	end := time.Now().Add(d)
	ch.undo = append(ch.undo, func() { time.Sleep(time.Until(end)) }) // stop returns with a leader
}

// replace makes server i leave and join again at a new address 1 to 6 s
// later; server 0 is the leader (as srvr reports it): its leaving holds
// an election of 0.2 to 1 s (a leader stopped, not failed: the followers
// see it go at once). It returns how long the server is away (0 for
// i < 0: no server to replace).
func (ch *chaos) replace(i int) time.Duration {
	if i < 0 {
		return 0
	}
	d := time.Duration(1000+ch.rng.IntN(5000)) * time.Millisecond
	ch.s.LeaveServer(i)
	ch.log(fmt.Sprintf("chaos: server %d leaves, and joins again at a new address in %v", i, d))
	if i == 0 {
		ch.election(1000)
	}
	ch.later(d, fmt.Sprintf("server %d joins", i), func() { _ = ch.s.JoinServer(i) })
	return d
}

// rolling replaces every server in turn, as a Kubernetes StatefulSet's
// rolling update does: from the last server to the first (the leader
// last, as operators do), each 1 to 2 s after the one before joined
// again. A server that has left already (a replace under way) is passed
// over.
func (ch *chaos) rolling() {
	ch.log("chaos: rolling replacement of every server")
	for i := ch.n - 1; i >= 0; i-- {
		d := time.Duration(0)
		if !ch.s.left(i) {
			d = ch.replace(i)
		}
		if !ch.pause(d + time.Duration(1000+ch.rng.IntN(1000))*time.Millisecond) {
			return
		}
	}
}

// presentServer draws a server that has not left, or returns -1.
func (ch *chaos) presentServer() int {
	var present []int
	for i := range ch.n {
		if !ch.s.left(i) {
			present = append(present, i)
		}
	}
	if len(present) == 0 {
		return -1
	}
	return present[ch.rng.IntN(len(present))]
}

// later runs undo after d, as the step what (WithSteps), or at stop if
// it has not run by then.
func (ch *chaos) later(d time.Duration, what string, undo func()) {
	timer := time.AfterFunc(d, func() {
		if ch.s.turn(keyTimer + "chaos: " + what) {
			undo()
		}
	})
	ch.undo = append(ch.undo, func() {
		if timer.Stop() {
			undo()
		}
	})
}

// sessionTimeout is the negotiated timeout of session id (the server's
// minimum if it is gone).
func (s *Server) sessionTimeout(id int64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[id]; ss != nil && ss.timeout > 0 {
		return ss.timeout
	}
	return s.cfg.minSession
}
