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
	// Record, if set, is told each event as it happens, from one
	// goroutine: the schedule, for a replay to force (Plan).
	Record func(ChaosEvent)
	// Plan, if not nil, forces these events, in order, instead of drawing
	// them (Seed, Events and Faults unused): a saved run's schedule
	// replayed on later code. An event whose sessions are no longer live,
	// or whose server has left already, does nothing to them (and says so
	// in Log).
	Plan []ChaosEvent
}

// ChaosEvent is one event of a chaos schedule, as StartChaos drew it
// (Chaos.Record) or is told to force it (Chaos.Plan). A rolling
// replacement is several: "rolling" (which says it begins), then each
// server's "replace", with a "pause" where a server had left already and
// at the end.
type ChaosEvent struct {
	// After is the pause before the event, a step of its own; 0: in the
	// same step as the event before.
	After time.Duration `json:"after"`
	// Fault is a ChaosFaults name, "rolling", or "pause" (nothing happens).
	Fault string `json:"fault"`
	// Server is the server of a server-lag, server-cut, replace or
	// minority (-1: a replace found none present).
	Server int `json:"server"`
	// Sessions are those a session-cut or a minority cuts off.
	Sessions []int64 `json:"sessions,omitempty"`
	// For is how long the fault lasts; for a server-lag, the lag.
	For time.Duration `json:"for,omitempty"`
	// Election is, for a replace of server 0 (the leader), the election
	// its leaving holds.
	Election time.Duration `json:"election,omitempty"`
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
// the seed and on the live sessions and servers at each event; c.Record
// is told each event, and c.Plan, if set, replaces the draws with events
// recorded before. It panics on a name ChaosFaults does not list. stop ends the schedule, lets
// through every session and server it cut off, brings back every server
// that left, returns the servers to no delay, and waits for the
// schedule's goroutine and any election it began.
func (s *Server) StartChaos(c Chaos) (stop func()) {
	ch := newChaos(s, c)
	if c.Plan != nil {
		go ch.force(c.Plan)
	} else {
		go ch.run(c.Events)
	}
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
	record       func(ChaosEvent)
	spare        func(int64) bool
	forced       bool // the events are a Plan's: their sessions are checked
	calmed, done chan struct{}
	undo         []func()            // run at stop: let through, join again
	cutUntil     map[int64]time.Time // sessions cut off, and until when
}

func newChaos(s *Server, c Chaos) *chaos {
	ch := &chaos{s: s, n: len(s.Servers()), rng: rand.New(rand.NewPCG(c.Seed, 0xc4a05)), log: c.Log, record: c.Record,
		spare: c.Spare, calmed: make(chan struct{}), done: make(chan struct{}), cutUntil: map[int64]time.Time{}}
	if ch.log == nil {
		ch.log = func(string) {}
	}
	if ch.record == nil {
		ch.record = func(ChaosEvent) {}
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
	defer ch.finish()
	for range events {
		after := time.Duration(500+ch.rng.IntN(2500)) * time.Millisecond
		if !ch.pause(after) {
			return
		}
		if len(ch.mix) > 0 {
			ch.draw(ch.mix[ch.rng.IntN(len(ch.mix))], after)
		} else {
			ch.do(ChaosEvent{After: after, Fault: "pause"})
		}
	}
}

// force plays the events of plan; once calmed, it undoes what is left
// undone.
func (ch *chaos) force(plan []ChaosEvent) {
	defer ch.finish()
	ch.forced = true
	for _, ev := range plan {
		if ev.After > 0 && !ch.pause(ev.After) {
			return
		}
		ch.do(ev)
	}
}

// finish waits for stop, then undoes what is left undone, and tells stop
// the schedule is over.
func (ch *chaos) finish() {
	<-ch.calmed // what is cut off stays so until stop
	for _, u := range ch.undo {
		u()
	}
	close(ch.done)
}

// do records ev and applies it.
func (ch *chaos) do(ev ChaosEvent) {
	ch.record(ev)
	ch.apply(ev)
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

// draw draws the event of fault name, which came after a pause of
// after, and does it (a rolling replacement, its events one by one).
func (ch *chaos) draw(name string, after time.Duration) {
	ev := ChaosEvent{After: after, Fault: name}
	switch name {
	case "session-cut":
		var ids []int64
		for _, id := range ch.s.Sessions() {
			if ch.cuttable(id) {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			ch.do(ev) // none to cut
			return
		}
		id := ids[ch.rng.IntN(len(ids))]
		ev.Sessions = []int64{id}
		ev.For = time.Duration(float64(ch.s.sessionTimeout(id)) * (0.3 + 1.7*ch.rng.Float64()))
	case "server-lag":
		ev.Server, ev.For = ch.rng.IntN(ch.n), time.Duration(ch.rng.IntN(300))*time.Millisecond
	case "server-cut":
		ev.Server = ch.rng.IntN(ch.n)
		ev.For = time.Duration(1000+ch.rng.IntN(3000)) * time.Millisecond
	case "election":
		ev.For = ch.electionTime(3000)
	case "replace":
		ch.drawReplace(ch.presentServer(), after)
		return
	case "rolling":
		ch.rolling(after)
		return
	case "minority":
		ev.Server = 1 + ch.rng.IntN(ch.n-1)
		longest := ch.s.cfg.minSession
		for _, id := range ch.s.sessionsOn(ev.Server) {
			if ch.cuttable(id) {
				ev.Sessions = append(ev.Sessions, id)
				longest = max(longest, ch.s.sessionTimeout(id))
			}
		}
		ev.For = time.Duration(float64(longest) * (1 + ch.rng.Float64()))
	}
	ch.do(ev)
}

// cuttable reports whether the chaos may cut session id off now: not
// spared, not cut off already.
func (ch *chaos) cuttable(id int64) bool {
	return !ch.spare(id) && !time.Now().Before(ch.cutUntil[id])
}

// electionTime draws an election's length: 0.2 s to upTo ms.
func (ch *chaos) electionTime(upTo int) time.Duration {
	return time.Duration(200+ch.rng.IntN(upTo-200)) * time.Millisecond
}

// drawReplace draws how long server i (-1: none present) stays away, and
// for server 0 the election its leaving holds (0.2 to 1 s: a leader
// stopped, not failed, the followers see it go at once), and does the
// replace. It returns how long the server is away (0 without a server).
func (ch *chaos) drawReplace(i int, after time.Duration) time.Duration {
	ev := ChaosEvent{After: after, Fault: "replace", Server: i}
	if i >= 0 {
		ev.For = time.Duration(1000+ch.rng.IntN(5000)) * time.Millisecond
	}
	if i == 0 {
		ev.Election = ch.electionTime(1000)
	}
	ch.do(ev)
	return ev.For
}

// rolling replaces every server in turn, as a Kubernetes StatefulSet's
// rolling update does: from the last server to the first (the leader
// last, as operators do), each 1 to 2 s after the one before joined
// again. A server that has left already (a replace under way) is passed
// over.
func (ch *chaos) rolling(after time.Duration) {
	ch.do(ChaosEvent{After: after, Fault: "rolling"})
	wait := time.Duration(0)
	for i := ch.n - 1; i >= 0; i-- {
		if wait > 0 && !ch.pause(wait) {
			return
		}
		d := time.Duration(0)
		switch {
		case !ch.s.left(i):
			d = ch.drawReplace(i, wait)
		case wait > 0:
			ch.do(ChaosEvent{After: wait, Fault: "pause"})
		}
		wait = d + time.Duration(1000+ch.rng.IntN(1000))*time.Millisecond
	}
	if ch.pause(wait) {
		ch.do(ChaosEvent{After: wait, Fault: "pause"})
	}
}

// apply does event ev, drawn or forced.
func (ch *chaos) apply(ev ChaosEvent) {
	switch ev.Fault {
	case "session-cut":
		for _, id := range ch.live(ev.Sessions) {
			ch.cutOff(id, ev.For)
			ch.log(fmt.Sprintf("chaos: session %x cut off for %v", id, ev.For.Round(time.Millisecond)))
			ch.later(ev.For, fmt.Sprintf("session %x back", id), func() { ch.letThrough(id) })
		}
	case "server-lag":
		ch.s.SetDelay(ev.Server, ev.For)
		ch.log(fmt.Sprintf("chaos: server %d lags %v", ev.Server, ev.For))
	case "server-cut":
		i := ev.Server
		ch.s.IsolateServer(i, true)
		ch.log(fmt.Sprintf("chaos: server %d cut off", i))
		ch.later(ev.For, fmt.Sprintf("server %d back", i), func() { ch.s.IsolateServer(i, false) })
	case "election":
		ch.election(ev.For)
	case "replace":
		ch.replace(ev)
	case "rolling":
		ch.log("chaos: rolling replacement of every server")
	case "minority":
		ch.minority(ev)
	}
}

// election holds a leader election of d.
func (ch *chaos) election(d time.Duration) {
	ch.s.ChangeLeader(d)
	ch.log(fmt.Sprintf("chaos: leader election, nobody serves for %v", d))
	end := time.Now().Add(d)
	ch.undo = append(ch.undo, func() { time.Sleep(time.Until(end)) }) // stop returns with a leader
}

// live returns ids, drawn from those the chaos may cut off now; of a
// forced event's, those it may cut off now, saying in the log which it
// may not.
func (ch *chaos) live(ids []int64) []int64 {
	if !ch.forced {
		return ids
	}
	var out []int64
	for _, id := range ids {
		if ch.cuttable(id) && slices.Contains(ch.s.Sessions(), id) {
			out = append(out, id)
		} else {
			ch.log(fmt.Sprintf("chaos: session %x not live, spared or cut off already: left alone", id))
		}
	}
	return out
}

// cutOff cuts session id off for d.
func (ch *chaos) cutOff(id int64, d time.Duration) {
	ch.s.Isolate(id, true)
	ch.cutUntil[id] = time.Now().Add(d)
}

// letThrough lets session id through again, unless it is spared (a
// crashed process's session stays dead).
func (ch *chaos) letThrough(id int64) {
	if !ch.spare(id) {
		ch.s.Isolate(id, false)
	}
}

// minority cuts follower ev.Server off with ev.Sessions (those connected
// to it) for ev.For.
func (ch *chaos) minority(ev ChaosEvent) {
	i := ev.Server
	ids := ch.live(ev.Sessions)
	for _, id := range ids {
		ch.cutOff(id, ev.For)
	}
	ch.s.IsolateServer(i, true)
	ch.log(fmt.Sprintf("chaos: server %d cut off with its sessions %x for %v", i, ids, ev.For.Round(time.Millisecond)))
	ch.later(ev.For, fmt.Sprintf("server %d and its sessions back", i), func() {
		ch.s.IsolateServer(i, false)
		for _, id := range ids {
			ch.letThrough(id)
		}
	})
}

// replace makes server ev.Server leave, holds ev.Election if it is
// server 0, and makes it join again at a new address ev.For later
// (nothing without a server, or for a server that has left already).
func (ch *chaos) replace(ev ChaosEvent) {
	i, d := ev.Server, ev.For
	switch {
	case i < 0:
		return
	case ch.s.left(i):
		ch.log(fmt.Sprintf("chaos: server %d has left already: left alone", i))
		return
	}
	ch.s.LeaveServer(i)
	ch.log(fmt.Sprintf("chaos: server %d leaves, and joins again at a new address in %v", i, d))
	if ev.Election > 0 {
		ch.election(ev.Election)
	}
	ch.later(d, fmt.Sprintf("server %d joins", i), func() { _ = ch.s.JoinServer(i) })
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
