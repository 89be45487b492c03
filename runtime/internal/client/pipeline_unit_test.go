package client

import "testing"

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// A listing waits for the frame that carries its create's mark; one whose
// create never shows is let go by remove, once; other frames leave it.
func TestSentWaits(t *testing.T) {
	var w sentWaits
	a := &listing{mark: "_c_aaaa-lock-", sent: make(chan struct{})}
	b := &listing{mark: "_c_bbbb-lock-", sent: make(chan struct{})}
	w.add(a)
	w.add(b)
	w.wrote([]byte("\x00\x00\x00\x20 /dir/_c_cccc-lock- other create"))
	if closed(a.sent) || closed(b.sent) || w.n.Load() != 2 {
		t.Fatal("a frame without their marks released a listing")
	}
	w.wrote([]byte("\x00\x00\x00\x20 /dir/_c_bbbb-lock-\x00data"))
	if closed(a.sent) || !closed(b.sent) || w.n.Load() != 1 {
		t.Fatalf("after b's create: a released %v, b released %v, %d waiting", closed(a.sent), closed(b.sent), w.n.Load())
	}
	w.remove(b) // already released: must not close twice
	w.remove(a)
	if !closed(a.sent) || w.n.Load() != 0 {
		t.Fatal("remove did not release a")
	}
	w.remove(a)
	w.wrote([]byte("_c_aaaa-lock-")) // nothing waits: a no-op
}
