package cli

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// tee returns a writer that writes to l and
// also hands each write to ch, so that a test waiting for output wakes
// for what goes to standard error too.
func (l *lockedBuffer) tee(ch chan string) *teeWriter { return &teeWriter{l, ch} }

type teeWriter struct {
	l  *lockedBuffer
	ch chan string
}

func (w *teeWriter) Write(p []byte) (int, error) {
	w.l.Write(p)
	w.ch <- string(p)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// inspect --watch through an outage, as an operator at 3 a.m. meets it:
// ZooKeeper stops answering inspect (its connection cut, every new one
// refused) and its session expires meanwhile. The watch does not exit: it
// shows the outage with the last table seen, and once ZooKeeper answers
// again it shows the live state on a new session. With --json, stdout
// keeps one snapshot per document and the outage goes to stderr.
func TestInspectWatchThroughOutage(t *testing.T) {
	srv, _, _, _, _ := liveSetup(t)

	for _, asJSON := range []bool{false, true} {
		name := map[bool]string{false: "table", true: "json"}[asJSON]
		t.Run(name, func(t *testing.T) {
			p := zktest.NewProxy(t, srv.Addr())
			args := []string{"inspect", "--servers=" + p.Addr(), "--watch=50ms", "--timeout=1s"}
			live := "held, 2 waiting" // the contended lock, in the table
			if asJSON {
				args = append(args, "--json")
				live = `"holders"`
			}
			w := &writes{ch: make(chan string, 64)}
			var stderr lockedBuffer
			phase, mark, sessions := 0, 0, 0
			out := watchArgsUntil(t, args, w, stderr.tee(w.ch), w.ch, func(all string) bool {
				switch {
				case phase == 0 && strings.Contains(all, live):
					// The outage: inspect is cut off and refused, and its
					// session expires on the server behind its back.
					p.Reject(true)
					p.CutAll()
					for _, s := range p.Sessions() {
						zktest.ExpireSession(t, srv.Servers(), s.ID, s.Passwd)
					}
					sessions = len(p.Sessions())
					phase, mark = 1, len(all)
				case phase == 1 && (asJSON && strings.Contains(stderr.String(), "ZooKeeper unreachable since") ||
					!asJSON && strings.Contains(all[mark:], "OUTAGE") && strings.Contains(all[mark:], "Last seen at")):
					p.Reject(false) // ZooKeeper answers again
					phase, mark = 2, len(all)
				case phase == 2:
					return liveFrame(all[mark:], live, asJSON)
				}
				return false
			})
			if len(p.Sessions()) <= sessions {
				t.Errorf("no new session after the expiry: %d sessions, %d before", len(p.Sessions()), sessions)
			}
			if asJSON {
				if !strings.Contains(stderr.String(), "ZooKeeper back after") || strings.Contains(out, "OUTAGE") {
					t.Errorf("--json: stderr %q; stdout has an outage frame: %v", stderr.String(), strings.Contains(out, "OUTAGE"))
				}
				return
			}
			if i := strings.Index(out, "OUTAGE"); i < 0 || !strings.Contains(out[i:], "ZooKeeper unreachable since") {
				t.Errorf("no outage frame:\n%s", out)
			}
		})
	}
}

// liveFrame reports whether out has a frame of live state (not an outage
// frame, whose stale table has live in it too) that contains live.
func liveFrame(out, live string, asJSON bool) bool {
	if asJSON {
		return strings.Contains(out, live)
	}
	for _, f := range strings.Split(out, "zkgen inspect ")[1:] {
		header, _, _ := strings.Cut(f, "\n")
		if !strings.Contains(header, "OUTAGE") && strings.Contains(f, live) {
			return true
		}
	}
	return false
}
