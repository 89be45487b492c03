package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

func TestCarries(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"abc", "", true}, {"abc", "abc", true}, {"xabcx", "abc", true}, {"ab", "abc", false},
		{"abxabc", "abc", true}, {"aabab", "abb", false}, {"", "a", false},
	} {
		if got := Carries([]byte(c.p), c.s); got != c.want {
			t.Errorf("Carries(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}

// frame prefixes body with its length.
func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// seen records what In reported.
type seen struct {
	timeouts []time.Duration
	replies  [][2]int64
}

func (s *seen) Connected(d time.Duration) { s.timeouts = append(s.timeouts, d) }
func (s *seen) Reply(xid int32, zxid int64) {
	s.replies = append(s.replies, [2]int64{int64(xid), zxid})
}

// The server's stream, read in chunks of every size: the ConnectResponse is
// reported once with its timeout, then every reply header in order, and
// with hide each reply's zxid (bytes 8 to 16 of its frame) reads as 0 while
// the rest is untouched.
func TestInReadsTheStream(t *testing.T) {
	hello := binary.BigEndian.AppendUint32(nil, 0)                                // protocol version
	hello = binary.BigEndian.AppendUint32(hello, 4000)                            // timeout, ms
	hello = binary.BigEndian.AppendUint64(hello, 0x77)                            // session id
	hello = append(binary.BigEndian.AppendUint32(hello, 16), make([]byte, 17)...) // password, read-only
	reply := func(xid int32, zxid int64, payload string) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(xid))
		b = binary.BigEndian.AppendUint64(b, uint64(zxid))
		return frame(append(binary.BigEndian.AppendUint32(b, 0), payload...))
	}
	r1, ping, note := reply(5, 0x1234, "abc"), reply(-2, 0x900, ""), reply(XidNotification, -1, "event")
	stream := bytes.Join([][]byte{frame(hello), r1, ping, note}, nil)
	for _, chunk := range []int{1, 2, 5, 13, len(stream)} {
		for _, hide := range []bool{false, true} {
			in, s := NewIn(), &seen{}
			got := bytes.Clone(stream)
			for i := 0; i < len(got); i += chunk {
				in.Read(got[i:min(i+chunk, len(got))], hide, s)
			}
			if len(s.timeouts) != 1 || s.timeouts[0] != 4*time.Second {
				t.Fatalf("chunk %d: Connected %v, want once with 4s", chunk, s.timeouts)
			}
			want := [][2]int64{{5, 0x1234}, {-2, 0x900}, {XidNotification, -1}}
			if len(s.replies) != len(want) || s.replies[0] != want[0] || s.replies[1] != want[1] || s.replies[2] != want[2] {
				t.Fatalf("chunk %d: replies %v, want %v", chunk, s.replies, want)
			}
			wantStream := stream
			if hide {
				wantStream = bytes.Clone(stream)
				for _, at := range []int{len(frame(hello)), len(frame(hello)) + len(r1), len(frame(hello)) + len(r1) + len(ping)} {
					clear(wantStream[at+8 : at+16])
				}
			}
			if !bytes.Equal(got, wantStream) {
				t.Fatalf("chunk %d, hide %v: stream\n got %x\nwant %x", chunk, hide, got, wantStream)
			}
		}
	}
}

// Out stamps the zxid into the ConnectRequest (the first frame) and into
// setWatches requests only, and tells the xids of requests.
func TestOutStampsZxids(t *testing.T) {
	var o Out
	connect := frame(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, 0), 99))
	if w := o.Wrote(connect, 0x42); !w.Connect || binary.BigEndian.Uint64(connect[connectZxidAt:]) != 0x42 {
		t.Fatalf("ConnectRequest: %+v, zxid %#x; want Connect and 0x42", w, binary.BigEndian.Uint64(connect[connectZxidAt:]))
	}
	req := func(xid, op int32, z int64) []byte {
		b := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, uint32(xid)), uint32(op))
		return frame(append(binary.BigEndian.AppendUint64(b, uint64(z)), 0, 0, 0, 0))
	}
	sw, get := req(7, OpSetWatches, 1), req(8, 4, 1)
	if w := o.Wrote(sw, 0x43); w.Xid != 7 || binary.BigEndian.Uint64(sw[setWatchesZxidAt:]) != 0x43 {
		t.Fatalf("setWatches: %+v, zxid %#x; want xid 7 and 0x43", w, binary.BigEndian.Uint64(sw[setWatchesZxidAt:]))
	}
	if w := o.Wrote(get, 0x44); w.Xid != 8 || w.Connect || binary.BigEndian.Uint64(get[setWatchesZxidAt:]) != 1 {
		t.Fatalf("getData: %+v, bytes 12-20 %#x; want xid 8, untouched", w, binary.BigEndian.Uint64(get[setWatchesZxidAt:]))
	}
	if w := o.Wrote([]byte{0, 0, 0, 1}, 0); !w.Short {
		t.Fatalf("a 4-byte frame: %+v, want Short", w)
	}
}
