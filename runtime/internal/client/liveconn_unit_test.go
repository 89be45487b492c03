package client

import (
	"encoding/binary"
	"net"
	"testing"
	"time"
)

// recConn records what is written to it and whether it was closed.
type recConn struct {
	net.Conn
	wrote  int
	closed bool
}

func (c *recConn) Write(p []byte) (int, error)      { c.wrote++; return len(p), nil }
func (c *recConn) Close() error                     { c.closed = true; return nil }
func (c *recConn) SetReadDeadline(time.Time) error  { return nil }
func (c *recConn) SetDeadline(time.Time) error      { return nil }
func (c *recConn) SetWriteDeadline(time.Time) error { return nil }

// pingFrame is go-zookeeper's ping: length 8, xid -2, opcode 11.
func pingFrame() []byte {
	f := binary.BigEndian.AppendUint32(nil, 8)
	f = binary.BigEndian.AppendUint32(f, uint32(0xfffffffe))
	return binary.BigEndian.AppendUint32(f, 11)
}

// A frame written once the connection's read deadline has passed is not
// sent, and the connection is closed (liveConn.Write): the receive loop
// is about to close it for its silence, and a ping due at that instant
// must not reach the server in some runs and not in others. Before the
// deadline, and with none, frames go out.
func TestLiveConnSendsNothingPastItsReadDeadline(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Time
		sent     bool
	}{
		{"no deadline", time.Time{}, true},
		{"before the deadline", time.Now().Add(time.Hour), true},
		{"past the deadline", time.Now().Add(-time.Millisecond), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Session{}
			rc := &recConn{}
			c := &liveConn{Conn: rc, s: s}
			c.zxid = newZxidGuard(s, c)
			if err := c.SetReadDeadline(tc.deadline); err != nil {
				t.Fatal(err)
			}
			p := pingFrame()
			if n, err := c.Write(p); n != len(p) || err != nil {
				t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(p))
			}
			if sent := rc.wrote == 1; sent != tc.sent || rc.closed == tc.sent {
				t.Fatalf("sent %v, closed %v; want sent %v, closed %v", sent, rc.closed, tc.sent, !tc.sent)
			}
		})
	}
}
