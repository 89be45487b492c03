package wire

import (
	"bytes"
	"encoding/binary"
	"slices"
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
	replies  [][3]int64
}

func (s *seen) Connected(h Handshake) { s.timeouts = append(s.timeouts, h.Timeout) }
func (s *seen) Reply(xid int32, zxid int64, code int32) {
	s.replies = append(s.replies, [3]int64{int64(xid), zxid, int64(code)})
}

// The server's stream, read in chunks of every size: the ConnectResponse is
// reported once with its timeout, then every reply header in order (xid,
// zxid, error code), and with hide each reply's zxid (bytes 8 to 16 of its
// frame) reads as 0 while the rest, the error code included, is
// untouched.
func TestInReadsTheStream(t *testing.T) {
	hello := binary.BigEndian.AppendUint32(nil, 0)                                // protocol version
	hello = binary.BigEndian.AppendUint32(hello, 4000)                            // timeout, ms
	hello = binary.BigEndian.AppendUint64(hello, 0x77)                            // session id
	hello = append(binary.BigEndian.AppendUint32(hello, 16), make([]byte, 17)...) // password, read-only
	reply := func(xid int32, zxid int64, code int32, payload string) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(xid))
		b = binary.BigEndian.AppendUint64(b, uint64(zxid))
		return frame(append(binary.BigEndian.AppendUint32(b, uint32(code)), payload...))
	}
	r1, ping, note := reply(5, 0x1234, 0, "abc"), reply(-2, 0x900, 0, ""), reply(XidNotification, -1, 0, "event")
	refused := reply(-1000, 0x901, CodeUnimplemented, "")
	stream := bytes.Join([][]byte{frame(hello), r1, ping, note, refused}, nil)
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
			want := [][3]int64{{5, 0x1234, 0}, {-2, 0x900, 0}, {XidNotification, -1, 0}, {-1000, 0x901, CodeUnimplemented}}
			if !slices.Equal(s.replies, want) {
				t.Fatalf("chunk %d: replies %v, want %v", chunk, s.replies, want)
			}
			wantStream := stream
			if hide {
				wantStream = bytes.Clone(stream)
				at := len(frame(hello))
				for _, f := range [][]byte{r1, ping, note, refused} {
					clear(wantStream[at+8 : at+16])
					at += len(f)
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

// A ConnectResponse gives its timeout and credentials; cut short, what it
// holds; an expired session's (timeout 0) a zero timeout.
func TestParseConnectResponse(t *testing.T) {
	pw := bytes.Repeat([]byte{0xab}, 16)
	body := binary.BigEndian.AppendUint32(nil, 0)
	body = binary.BigEndian.AppendUint32(body, 6000)
	body = binary.BigEndian.AppendUint64(body, 0x1234)
	body = append(binary.BigEndian.AppendUint32(body, 16), pw...)
	body = append(body, 0)
	f := frame(body)
	h := ParseConnectResponse(f)
	if h.Timeout != 6*time.Second || h.SessionID != 0x1234 || !bytes.Equal(h.Passwd, pw) {
		t.Fatalf("ParseConnectResponse = %+v", h)
	}
	if h := ParseConnectResponse(f[:20]); h.Timeout != 6*time.Second || h.SessionID != 0x1234 || h.Passwd != nil {
		t.Fatalf("cut before the password: %+v", h)
	}
	expired := bytes.Clone(f)
	clear(expired[8:12])
	if h := ParseConnectResponse(expired); h.Timeout != 0 {
		t.Fatalf("expired: %+v", h)
	}
}

// The frames written to close a session: a ConnectRequest with the
// session's credentials (its fields where the server reads them) and a
// closeSession request; the reply's header is read back.
func TestCloseSessionFrames(t *testing.T) {
	pw := bytes.Repeat([]byte{7}, 16)
	c := ConnectRequest(0x55, 4*time.Second, 0x99, pw)
	if got := int(binary.BigEndian.Uint32(c)); got != len(c)-4 {
		t.Fatalf("length prefix %d, frame %d bytes", got, len(c))
	}
	if z := binary.BigEndian.Uint64(c[connectZxidAt:]); z != 0x55 {
		t.Fatalf("last zxid %#x", z)
	}
	if ms := binary.BigEndian.Uint32(c[16:]); ms != 4000 {
		t.Fatalf("timeout %d ms", ms)
	}
	if id := binary.BigEndian.Uint64(c[20:]); id != 0x99 {
		t.Fatalf("session id %#x", id)
	}
	if n := binary.BigEndian.Uint32(c[28:]); n != 16 || !bytes.Equal(c[32:48], pw) || len(c) != 49 {
		t.Fatalf("password: %x", c[28:])
	}
	r := Request(3, OpCloseSession)
	if !bytes.Equal(r, []byte{0, 0, 0, 8, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xf5}) {
		t.Fatalf("close request %x", r)
	}
	rep := binary.BigEndian.AppendUint32(nil, 3)
	rep = binary.BigEndian.AppendUint64(rep, 0x10)
	rep = binary.BigEndian.AppendUint32(rep, uint32(0xffffff90)) // -112
	got, err := ReadFrame(bytes.NewReader(frame(rep)), 64)
	if err != nil {
		t.Fatal(err)
	}
	if xid, code, ok := ReplyHeader(got); !ok || xid != 3 || code != -112 {
		t.Fatalf("ReplyHeader = %d, %d, %v", xid, code, ok)
	}
	if _, err := ReadFrame(bytes.NewReader(frame(make([]byte, 65))), 64); err == nil {
		t.Fatal("a frame over the limit was read")
	}
}

// PathRequest frames a path and ints after the xid and opcode: addWatch's
// body is its path and mode, sync's its path.
func TestPathRequest(t *testing.T) {
	got := PathRequest(-7, OpAddWatch, "/a/b", AddWatchPersistentRecursive)
	want := frame([]byte{0xff, 0xff, 0xff, 0xf9, 0, 0, 0, 106, 0, 0, 0, 4, '/', 'a', '/', 'b', 0, 0, 0, 1})
	if !bytes.Equal(got, want) {
		t.Fatalf("addWatch frame\n got %x\nwant %x", got, want)
	}
	if got := PathRequest(3, OpSync, "/"); !bytes.Equal(got, frame([]byte{0, 0, 0, 3, 0, 0, 0, 9, 0, 0, 0, 1, '/'})) {
		t.Fatalf("sync frame %x", got)
	}
}
