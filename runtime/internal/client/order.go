package client

import (
	"sync"
	"time"
)

// Requests a session makes on several goroutines at once reach go-zookeeper's
// send queue in whatever order the goroutines run, and on the wire in that
// order; on a simulated server (runtime/zktest/sim) that order decides
// which request a fault hits and what each read sees, so a replay of one
// seed could take another path. Spawn and Parallel give the requests one
// order: each goroutine's first request is written to the server before
// the next goroutine starts (or it returned without one, or orderWait
// passed: the connection is down), which costs a hand-off per goroutine
// and keeps them all in flight together.

// orderWait bounds how long Spawn and Parallel wait for a goroutine's
// first request to be written: while connected that takes microseconds;
// while reconnecting the requests wait in go-zookeeper's queue, and the
// caller need not wait with them.
const orderWait = time.Millisecond

// frameSignal tells when the session's connection writes a frame.
type frameSignal struct {
	mu   sync.Mutex
	next chan struct{} // closed at the next frame written; nil: nobody waits
}

// wrote is called for each frame written.
func (f *frameSignal) wrote() {
	f.mu.Lock()
	if f.next != nil {
		close(f.next)
		f.next = nil
	}
	f.mu.Unlock()
}

// await returns a channel closed when the next frame is written.
func (f *frameSignal) await() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.next == nil {
		f.next = make(chan struct{})
	}
	return f.next
}

// Spawn runs fn on a goroutine of its own, and returns once fn's first
// request has been written to the server (or any frame, or fn returned, or
// orderWait passed): the requests the caller makes next go out after it.
// wait waits for fn to return.
func (s *Ops) Spawn(fn func()) (wait func()) {
	done := make(chan struct{})
	written := s.frames.await()
	go func() {
		defer close(done)
		fn()
	}()
	awaitFirst(written, done)
	return func() { <-done }
}

// awaitFirst waits for a frame to be written, or done, or orderWait.
func awaitFirst(written, done <-chan struct{}) {
	t := time.NewTimer(orderWait)
	defer t.Stop()
	select {
	case <-written:
	case <-done:
	case <-t.C:
	}
}

// Parallel runs fn(0..n-1) on up to workers goroutines and waits for them
// all. fn(i+1) starts once fn(i)'s first request has been written (see
// Spawn).
func (s *Ops) Parallel(n, workers int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	next := make(chan int)
	done := make([]chan struct{}, n)
	for i := range done {
		done[i] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for w := 0; w < min(n, workers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
				close(done[i])
			}
		}()
	}
	for i := 0; i < n; i++ {
		written := s.frames.await()
		next <- i
		awaitFirst(written, done[i])
	}
	close(next)
	wg.Wait()
}
