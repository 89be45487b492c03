package sim

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// Chaos configures StartChaos.
type Chaos struct {
	Seed   uint64 // the schedule's draws
	Events int    // how many faults, a second or three apart
	// Spare, if set, names sessions the chaos must leave alone: never cut
	// off, nor let through again if the test cut them off itself (a
	// crashed process's session stays dead).
	Spare func(id int64) bool
	// Log, if set, is told each fault as it happens.
	Log func(what string)
}

// StartChaos runs a random schedule of session and server faults drawn
// from c.Seed (the request faults are WithRandomFaults'): c.Events times,
// 0.5 to 3 s apart, it cuts a live session off for 0.3 to 2 of its
// session timeouts (Isolate: the longer cuts expire it on the server's
// clock while its client counts the time on its own), or, on an ensemble,
// makes a server lag by up to 300 ms (SetDelay) or cuts a server off for 1
// to 4 s (IsolateServer: its clients move to another) or holds a leader
// election of 0.2 to 3 s (ChangeLeader). The draws depend on
// the seed and on the live sessions at each event. stop ends the schedule,
// lets through every session and server it cut off, returns the servers
// to no delay, and waits for the schedule's goroutine.
func (s *Server) StartChaos(c Chaos) (stop func()) {
	calmed, done := make(chan struct{}), make(chan struct{})
	log := c.Log
	if log == nil {
		log = func(string) {}
	}
	spare := c.Spare
	if spare == nil {
		spare = func(int64) bool { return false }
	}
	n := len(s.Servers())
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(c.Seed, 0xc4a05))
		var undo []func()
		cutUntil := map[int64]time.Time{} // sessions cut off, and until when
		defer func() {
			<-calmed // what is cut off stays so until stop
			for _, u := range undo {
				u()
			}
		}()
		letThrough := func(id int64) {
			if !spare(id) {
				s.Isolate(id, false)
			}
		}
		for range c.Events {
			select {
			case <-calmed:
				return
			case <-time.After(time.Duration(500+rng.IntN(2500)) * time.Millisecond):
			}
			var ids []int64
			for _, id := range s.Sessions() {
				if !time.Now().Before(cutUntil[id]) && !spare(id) {
					ids = append(ids, id)
				}
			}
			switch k := rng.IntN(5); {
			case n > 1 && k == 2:
				d := time.Duration(200+rng.IntN(2800)) * time.Millisecond
				s.ChangeLeader(d)
				log(fmt.Sprintf("chaos: leader election, nobody serves for %v", d))
				end := time.Now().Add(d)
				undo = append(undo, func() { time.Sleep(time.Until(end)) }) // stop returns with a leader
			case n > 1 && k == 0:
				i, d := rng.IntN(n), time.Duration(rng.IntN(300))*time.Millisecond
				s.SetDelay(i, d)
				log(fmt.Sprintf("chaos: server %d lags %v", i, d))
			case n > 1 && k == 1:
				i := rng.IntN(n)
				s.IsolateServer(i, true)
				log(fmt.Sprintf("chaos: server %d cut off", i))
				d := time.Duration(1000+rng.IntN(3000)) * time.Millisecond
				timer := time.AfterFunc(d, func() { s.IsolateServer(i, false) })
				undo = append(undo, func() {
					if timer.Stop() {
						s.IsolateServer(i, false)
					}
				})
			case len(ids) > 0:
				id := ids[rng.IntN(len(ids))]
				d := time.Duration(float64(s.sessionTimeout(id)) * (0.3 + 1.7*rng.Float64()))
				s.Isolate(id, true)
				cutUntil[id] = time.Now().Add(d)
				log(fmt.Sprintf("chaos: session %x cut off for %v", id, d.Round(time.Millisecond)))
				timer := time.AfterFunc(d, func() { letThrough(id) })
				undo = append(undo, func() {
					if timer.Stop() {
						letThrough(id)
					}
				})
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(calmed) })
		<-done
		for i := range n {
			s.SetDelay(i, 0)
		}
	}
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
