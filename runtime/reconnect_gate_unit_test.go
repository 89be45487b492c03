package runtime

import (
	"bytes"
	"encoding/binary"
	"testing"
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

func request(xid, op int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, 8)
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	return binary.BigEndian.AppendUint32(b, uint32(op))
}

// feed passes stream through g in chunks of n bytes, as reads would, and
// returns what go-zookeeper would see.
func feed(g *zxidGate, stream []byte, n int) []byte {
	out := bytes.Clone(stream)
	for i := 0; i < len(out); i += n {
		g.read(out[i:min(i+n, len(out))])
	}
	return out
}

func TestZxidGate(t *testing.T) {
	r1, r2 := reply(5, 0x1234, "abc"), reply(6, 0x5678, "")
	stream := append(append(connectResponse(0x77), r1...), r2...)
	zeroed := func(r []byte) []byte { r = bytes.Clone(r); clear(r[8:16]); return r }
	hs := len(connectResponse(0x77))
	for _, chunk := range []int{1, 3, 7, 1000} {
		// The first connection of a session is not gated.
		s := &Session{}
		if got := feed(newZxidGate(s), stream, chunk); !bytes.Equal(got, stream) {
			t.Fatalf("chunk %d: ungated connection changed the stream", chunk)
		}
		// A reconnection before its setWatches request: zxids withheld.
		s.anchored.Store(true)
		g := newZxidGate(s)
		g.wrote(request(0, 0)) // the ConnectRequest
		got := feed(g, stream, chunk)
		if want := append(append(connectResponse(0x77), zeroed(r1)...), zeroed(r2)...); !bytes.Equal(got, want) {
			t.Fatalf("chunk %d: before setWatches:\n got %x\nwant %x", chunk, got, want)
		}
		if g.gen != 1 {
			t.Fatalf("chunk %d: gen %d, want 1", chunk, g.gen)
		}
		// Once written, replies pass unchanged.
		g.wrote(request(7, 12))
		g.wrote(request(8, opSetWatches))
		if got := feed(g, r1, chunk); !bytes.Equal(got, r1) {
			t.Fatalf("chunk %d: after setWatches: got %x", chunk, got)
		}
		// The next reconnection waits for a second setWatches request: a
		// stale one of the connection before does not count.
		g2 := newZxidGate(s)
		got = feed(g2, stream, chunk)
		if !bytes.Equal(got[hs:], append(zeroed(r1), zeroed(r2)...)) || g2.gen != 2 {
			t.Fatalf("chunk %d: second reconnection: gen %d, got %x", chunk, g2.gen, got[hs:])
		}
		// A handshake that finds the session expired (id 0) is not counted.
		g3 := newZxidGate(s)
		feed(g3, connectResponse(0), chunk)
		if g3.gen != 0 || s.gatedConns.Load() != 2 {
			t.Fatalf("chunk %d: expired handshake counted: gen %d, conns %d", chunk, g3.gen, s.gatedConns.Load())
		}
	}
}
