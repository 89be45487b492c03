package client

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/zkgen/zkgen/runtime/internal/wire"
)

// Where the frames below carry a zxid (length prefix included).
const (
	connectZxidAt  = 8  // ConnectRequest: length, protocol version, last zxid seen
	setWatchesZxid = 12 // setWatches: length, xid, opcode, relative zxid
)

// connectResponse is a ConnectResponse frame for session id.
func connectResponse(id int64) []byte {
	body := make([]byte, 0, 37)
	body = binary.BigEndian.AppendUint32(body, 0)    // protocol version
	body = binary.BigEndian.AppendUint32(body, 4000) // timeout
	body = binary.BigEndian.AppendUint64(body, uint64(id))
	body = binary.BigEndian.AppendUint32(body, 16)
	body = append(body, make([]byte, 16)...) // password
	body = append(body, 0)                   // read-only
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// reply is a reply frame: xid, zxid, err, then payload.
func reply(xid int32, zxid int64, payload string) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	body = binary.BigEndian.AppendUint64(body, uint64(zxid))
	body = binary.BigEndian.AppendUint32(body, 0)
	body = append(body, payload...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// connectRequest is a ConnectRequest frame with lastZxidSeen z.
func connectRequest(z int64) []byte {
	body := binary.BigEndian.AppendUint32(nil, 0)
	body = binary.BigEndian.AppendUint64(body, uint64(z))
	body = binary.BigEndian.AppendUint32(body, 4000)
	body = binary.BigEndian.AppendUint64(body, 0x77)
	body = binary.BigEndian.AppendUint32(body, 0)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// setWatches is a setWatches request frame with relative zxid z.
func setWatches(xid int32, z int64) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(xid))
	body = binary.BigEndian.AppendUint32(body, wire.OpSetWatches)
	body = binary.BigEndian.AppendUint64(body, uint64(z))
	body = append(body, 0, 0, 0, 1, 0, 0, 0, 2, '/', 'a', 0, 0, 0, 0, 0, 0, 0, 0)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// feed passes stream through g in chunks of n bytes, as reads would, and
// returns what go-zookeeper would see.
func feed(g *zxidGuard, stream []byte, n int) []byte {
	out := bytes.Clone(stream)
	for i := 0; i < len(out); i += n {
		g.read(out[i:min(i+n, len(out))])
	}
	return out
}

func zxidAt(frame []byte, at int) int64 { return int64(binary.BigEndian.Uint64(frame[at:])) }

func TestZxidGuard(t *testing.T) {
	ping, note := reply(-2, 0x900, ""), reply(-1, -1, "event")
	r1, r2 := reply(5, 0x1234, "abc"), reply(6, 0x1200, "")
	own := reply(injectXidFirst-1, 0x1100, "") // a request of the session's own (inject.go)
	stream := bytes.Join([][]byte{connectResponse(0x77), r1, ping, note, own, r2}, nil)
	hidden := func(r []byte) []byte { r = bytes.Clone(r); clear(r[8:16]); return r }
	for _, chunk := range []int{1, 3, 7, 1000} {
		s := &Session{}
		c := &liveConn{}
		g := newZxidGuard(s, c)
		ownReply, _ := c.injected.add(injectXidFirst - 1)
		cr := connectRequest(99) // what go-zookeeper sends: its own field, never written
		g.wrote(cr)
		if z := zxidAt(cr, connectZxidAt); z != 0 {
			t.Fatalf("chunk %d: first ConnectRequest carries %#x, want 0", chunk, z)
		}
		got := feed(g, stream, chunk)
		want := bytes.Join([][]byte{connectResponse(0x77), hidden(r1), hidden(ping), hidden(note), hidden(own), hidden(r2)}, nil)
		if !bytes.Equal(got, want) {
			t.Fatalf("chunk %d: replies as go-zookeeper sees them:\n got %x\nwant %x", chunk, got, want)
		}
		if z := s.lastZxid.Load(); z != 0x1234 {
			t.Fatalf("chunk %d: last zxid %#x, want 0x1234 (the greatest of the replies; not pings or notifications)", chunk, z)
		}
		if r := <-ownReply; r.zxid != 0x1100 || r.code != 0 || !c.ready.Load() {
			t.Fatalf("chunk %d: own request's reply %+v (ready %v), want zxid 0x1100", chunk, r, c.ready.Load())
		}
		// A setWatches written on this connection carries what the
		// earlier connections saw (none), not this one's replies.
		sw := setWatches(7, 0)
		g.wrote(sw)
		if z := zxidAt(sw, setWatchesZxid); z != 0 {
			t.Fatalf("chunk %d: setWatches on the first connection carries %#x", chunk, z)
		}
		// The next connection reports what the session saw.
		g2 := newZxidGuard(s, &liveConn{})
		cr2, sw2 := connectRequest(0), setWatches(8, 0)
		g2.wrote(cr2)
		feed(g2, bytes.Join([][]byte{connectResponse(0x77), reply(9, 0x5000, "")}, nil), chunk)
		g2.wrote(sw2)
		if z1, z2 := zxidAt(cr2, connectZxidAt), zxidAt(sw2, setWatchesZxid); z1 != 0x1234 || z2 != 0x1234 {
			t.Fatalf("chunk %d: reconnection: ConnectRequest %#x, setWatches %#x; want 0x1234 both", chunk, z1, z2)
		}
		if z := s.lastZxid.Load(); z != 0x5000 {
			t.Fatalf("chunk %d: last zxid %#x after the reconnection", chunk, z)
		}
	}
}
