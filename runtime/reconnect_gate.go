package runtime

import (
	"context"
	"encoding/binary"
	"errors"

	"github.com/go-zookeeper/zk"
)

// go-zookeeper v1.0.4 has a data race on reconnections of a session that
// holds watches: its connection loop starts the goroutine that reads replies
// (recvLoop), then reads the last zxid it has seen to re-register the
// watches (sendSetWatches), while that reader writes the same field for
// every reply. A request issued while the client was disconnected is sent
// the moment the connection is back, and its reply can be read before the
// watches are re-registered: the race detector reports the race and a test
// run with -race fails. The race is benign on the hardware Go supports (an
// aligned 64-bit word; either value is one the client saw), but it makes
// -race runs of code that reconnects flaky.
//
// The session contains it without patching the library, in the connection
// it dials (liveConn). On a reconnection, until the client has written the
// setWatches request of that connection, every reply reaches go-zookeeper
// with a zxid of 0, which it does not record: the field is not written, so
// nothing races. The setWatches request is created after the zxid was read,
// so once it has been written (counted with an atomic, which the race
// detector sees as an ordering) replies pass unchanged. The zxids withheld
// meanwhile (a few replies at most) cost nothing: the client's last zxid
// lags behind, which only makes the next setWatches ask the server about a
// slightly longer past.
//
// For every reconnection to send a setWatches request, the session keeps one
// watch registered for its whole life: an exists watch on anchorPath, a node
// nobody creates. A connection's setWatches request is the one written after
// those of every earlier connection (requests go out in order; one left
// unsent by a dying connection goes out on the next), so connection k's has
// been written once k of them were. A session watching so many paths that
// go-zookeeper splits the re-registration into several requests (over 128
// KiB of paths) may stop withholding early, and the race may then be
// reported again.

// anchorPath is the node the session's permanent exists watch is set on.
// Applications never create nodes under /zookeeper.
const anchorPath = "/zookeeper/zkgen-session-anchor"

// opSetWatches is the opcode of the request that re-registers watches.
const opSetWatches = 101

// zxidGate is the reconnection state of one connection (see above).
type zxidGate struct {
	s     *Session
	gated bool // dialed after the anchor watch was set

	// written by the reader only
	hs      [20]byte // ConnectResponse: length, version, timeout, session id
	hsN     int
	hsLen   int   // length of the ConnectResponse frame (-1: not known yet)
	gen     int64 // this connection's number among the gated ones that got a session; 0: none
	off     int   // offset in the current reply frame, length prefix included
	frame   int   // length of the current reply frame (-1: not known yet)
	lenBuf  [4]byte
	zeroing bool // the current frame's zxid is being withheld

	writes int // frames written; the first is the ConnectRequest
}

func newZxidGate(s *Session) *zxidGate {
	return &zxidGate{s: s, gated: s.anchored.Load(), hsLen: -1, frame: -1}
}

// wrote inspects a frame the client writes (go-zookeeper writes one frame
// per call: int32 length, int32 xid, int32 opcode, ...).
func (g *zxidGate) wrote(p []byte) {
	g.writes++
	if g.writes > 1 && len(p) >= 12 && int32(binary.BigEndian.Uint32(p[8:12])) == opSetWatches {
		g.s.setWatchesSent.Add(1)
	}
}

// read passes over bytes read from the server, withholding zxids as
// described above.
func (g *zxidGate) read(p []byte) {
	for i := 0; i < len(p); {
		if g.hsLen < 0 || g.hsN < 4+g.hsLen {
			// The ConnectResponse.
			if g.hsN < len(g.hs) {
				g.hs[g.hsN] = p[i]
			}
			g.hsN++
			i++
			if g.hsN == 4 {
				g.hsLen = int(binary.BigEndian.Uint32(g.hs[:4]))
			}
			if g.hsLen >= 0 && g.hsN == 4+g.hsLen && g.gated && g.hsN >= len(g.hs) &&
				binary.BigEndian.Uint64(g.hs[12:20]) != 0 {
				g.gen = g.s.gatedConns.Add(1)
			}
			continue
		}
		if g.gen == 0 {
			return // not gated: nothing to do
		}
		// A reply: int32 length, int32 xid, int64 zxid, int32 err, ...
		if g.off < 4 {
			g.lenBuf[g.off] = p[i]
			g.off++
			i++
			if g.off == 4 {
				g.frame = int(binary.BigEndian.Uint32(g.lenBuf[:]))
				g.zeroing = g.s.setWatchesSent.Load() < g.gen
			}
			continue
		}
		n := min(len(p)-i, 4+g.frame-g.off)
		if g.zeroing {
			for j := 0; j < n; j++ {
				if o := g.off + j; o >= 8 && o < 16 {
					p[i+j] = 0
				}
			}
		}
		g.off += n
		i += n
		if g.off >= 4+g.frame {
			g.off, g.frame = 0, -1
		}
	}
}

// anchor sets the session's permanent exists watch (see anchorPath) and
// keeps it set: if the watch ever fires, it is set again. Connections dialed
// from then on are gated.
func (s *Session) anchor(ctx context.Context) error {
	w, err := s.anchorOnce(ctx)
	if err != nil {
		return err
	}
	s.anchored.Store(true)
	go func() {
		for {
			select {
			case <-w:
			case <-s.done:
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			w, err = s.anchorOnce(ctx)
			cancel()
			if err != nil {
				if s.check() == nil {
					s.log.Debug("could not set the session's anchor watch again", "err", err)
				}
				return
			}
		}
	}()
	return nil
}

func (s *Session) anchorOnce(ctx context.Context) (<-chan zk.Event, error) {
	_, _, w, err := s.existsW(ctx, anchorPath)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	return w, nil
}
