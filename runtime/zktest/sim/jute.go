package sim

import (
	"encoding/binary"
	"errors"
)

// ZooKeeper's wire encoding (jute): big-endian integers, a boolean as one
// byte, strings and buffers as an int32 length (-1: null) and the bytes,
// vectors as an int32 count (-1: null) and the elements.

// errShort means a frame ended before a field did: the server closes the
// connection, as ZooKeeper does on a frame it cannot read.
var errShort = errors.New("sim: short frame")

// reader decodes one frame. The first error sticks; fields read after it
// are zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = errShort
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) int32() int32 {
	p := r.take(4)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (r *reader) int64() int64 {
	p := r.take(8)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

func (r *reader) bool() bool {
	p := r.take(1)
	return p != nil && p[0] != 0
}

// buffer reads a buffer; nil for a null one.
func (r *reader) buffer() []byte {
	n := r.int32()
	if n < 0 || r.err != nil {
		return nil
	}
	p := r.take(int(n))
	if p == nil {
		return nil
	}
	return append([]byte{}, p...)
}

func (r *reader) string() string { return string(r.buffer()) }

func (r *reader) strings() []string {
	n := r.int32()
	if n <= 0 || r.err != nil {
		return nil
	}
	if int(n) > len(r.b)/4 {
		r.err = errShort
		return nil
	}
	out := make([]string, 0, n)
	for i := int32(0); i < n && r.err == nil; i++ {
		out = append(out, r.string())
	}
	return out
}

func (r *reader) acls() []ACL {
	n := r.int32()
	if n < 0 || r.err != nil {
		return nil
	}
	if int(n) > len(r.b)/12 {
		r.err = errShort
		return nil
	}
	out := make([]ACL, 0, n)
	for i := int32(0); i < n && r.err == nil; i++ {
		out = append(out, ACL{Perms: r.int32(), Scheme: r.string(), ID: r.string()})
	}
	return out
}

// writer encodes one frame, its length prefix included (see frame).
type writer struct{ b []byte }

func newWriter() *writer { return &writer{b: make([]byte, 4, 64)} }

func (w *writer) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *writer) int64(v int64) { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }

func (w *writer) bool(v bool) {
	if v {
		w.b = append(w.b, 1)
	} else {
		w.b = append(w.b, 0)
	}
}

func (w *writer) buffer(p []byte) {
	if p == nil {
		w.int32(-1)
		return
	}
	w.int32(int32(len(p)))
	w.b = append(w.b, p...)
}

func (w *writer) string(s string) {
	w.int32(int32(len(s)))
	w.b = append(w.b, s...)
}

func (w *writer) strings(ss []string) {
	w.int32(int32(len(ss)))
	for _, s := range ss {
		w.string(s)
	}
}

func (w *writer) acls(as []ACL) {
	w.int32(int32(len(as)))
	for _, a := range as {
		w.int32(a.Perms)
		w.string(a.Scheme)
		w.string(a.ID)
	}
}

func (w *writer) stat(s *Stat) {
	w.int64(s.Czxid)
	w.int64(s.Mzxid)
	w.int64(s.Ctime)
	w.int64(s.Mtime)
	w.int32(s.Version)
	w.int32(s.Cversion)
	w.int32(s.Aversion)
	w.int64(s.EphemeralOwner)
	w.int32(s.DataLength)
	w.int32(s.NumChildren)
	w.int64(s.Pzxid)
}

// frame returns the encoded frame with its length prefix filled in.
func (w *writer) frame() []byte {
	binary.BigEndian.PutUint32(w.b, uint32(len(w.b)-4))
	return w.b
}
