package simsearch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// Session keeps a session open on the run's server for one process: a
// new one when the last one ended, as a service's Run loop does. It knows
// the servers by name (sim.Server.Hosts), looked up through the
// simulation's resolver, as a service on Kubernetes knows its ensemble's
// pods: it follows a server replaced at a new address. The goroutines of
// its process may share it: one keeps a recipe running on Get's sessions
// while another crashes the process (Run.Crash), say.
type Session struct {
	run  *Run
	who  int            // the process (Run.Session)
	seed runtime.Option // its random choices: one option value, one stream per session

	// mu guards what follows; it is never held while waiting (a goroutine
	// waiting for a mutex stops the simulation's steps: sim.WithSteps).
	mu      sync.Mutex
	n       int // sessions opened
	s       *runtime.Session
	crashed []*runtime.Session // sessions of the process before it crashed (Run.Crash)
	failing bool               // the last Connect failed
}

// Get returns the process's session, connecting a new one (4 s session
// timeout) if there is none or the last one ended; a generated client is
// built on it (coord.New(s)). It blocks until connected or ctx is done;
// a failed connect is tried again by the next Get, 200 ms later.
func (w *Session) Get(ctx context.Context) (*runtime.Session, error) {
	w.mu.Lock()
	old, failing := w.s, w.failing
	w.mu.Unlock()
	if old != nil && old.Err() == nil {
		return old, nil
	}
	if old != nil {
		if errors.Is(old.Err(), runtime.ErrSessionExpired) {
			w.run.mu.Lock()
			w.run.lost++
			w.run.mu.Unlock()
		}
		old.Close()
	}
	// Each session a client name of its own (sim.DialerFor): the closing
	// one's connections and the new one's are told apart, whichever dials
	// first.
	w.mu.Lock()
	w.n++
	n := w.n
	w.mu.Unlock()
	srv := w.run.srv
	dial := srv.DialerFor(fmt.Sprintf("p%d.%d", w.who, n))
	s, err := runtime.Connect(ctx, srv.Hosts(), runtime.WithDialer(dial),
		runtime.WithResolver(srv.LookupHost), runtime.WithSessionTimeout(4*time.Second),
		runtime.WithLogger(w.logger()), w.seed)
	if err != nil && ctx.Err() == nil {
		// Connect fails at once when a server's name resolves to nothing
		// (it left and has not joined again): the process tries again a
		// little later, not in a loop that stops virtual time.
		if !failing {
			w.run.Event(w.who, "connect failed (again every 200 ms until it succeeds): %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	w.mu.Lock()
	w.s, w.failing = s, err != nil
	w.mu.Unlock()
	return s, err
}

// Current is the process's session now, live or ended; nil if none is
// open (before the first Get, after Close or Crash).
func (w *Session) Current() *runtime.Session {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.s
}

// Close closes the process's sessions, those of its crashes included.
func (w *Session) Close() {
	w.mu.Lock()
	s, crashed := w.s, w.crashed
	w.s, w.crashed = nil, nil
	w.mu.Unlock()
	if s != nil {
		s.Close()
	}
	for _, s := range crashed { // the test's own cleanup: the process was dead
		s.Close()
	}
}

// Crash stops the process that keeps w as if killed or frozen: nothing of
// its session reaches the server any more (which expires it in its own
// time), the chaos leaves it alone, and the process must not go on with
// it. The process may start again with w.Get: a new session.
func (r *Run) Crash(who int, w *Session) {
	w.mu.Lock()
	s := w.s
	if s != nil {
		w.crashed = append(w.crashed, s)
		w.s = nil
	}
	w.mu.Unlock()
	if s == nil {
		return
	}
	r.Event(who, "crashes (session %x)", s.ID())
	r.mu.Lock()
	if r.crashed == nil {
		r.crashed = map[int64]bool{}
	}
	r.crashed[s.ID()] = true
	r.mu.Unlock()
	r.srv.Isolate(s.ID(), true)
}

// logger is the logger of the process's sessions: none, or with
// ZKGEN_SIM_LOGS set (to find why two replays differ), every record down
// to debug as a line of the history.
func (w *Session) logger() *slog.Logger {
	if os.Getenv("ZKGEN_SIM_LOGS") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(historyWriter{w.run, w.who}, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{} // the history has the virtual time
			}
			return a
		},
	}))
}

// historyWriter writes each log line as an event of process who.
type historyWriter struct {
	run *Run
	who int
}

func (h historyWriter) Write(p []byte) (int, error) {
	h.run.Event(h.who, "log %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
