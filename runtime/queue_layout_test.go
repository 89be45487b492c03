package runtime

import (
	"bytes"
	"testing"
)

// Item names round-trip: plain, priority and inline ones (whose base64url
// alphabet includes the '-' that separates the sequence number).
func TestItemNames(t *testing.T) {
	for _, tc := range []struct {
		priority bool
		prio     int
		data     []byte
		inline   bool
	}{
		{false, 0, []byte("x"), false},
		{true, 7, []byte("x"), false},
		{false, 0, nil, true},
		{false, 0, []byte{0xfb, 0xff, 0xfe}, true}, // "-__-" in base64url
		{false, 0, []byte(`{"id":42,"shard":3}`), true},
		{false, 0, bytes.Repeat([]byte{0xf8}, 191), true},
	} {
		for _, seq := range []string{"0000000000", "0000000042", "2147483647", "-000000001"} {
			name := itemNamePrefix(tc.priority, tc.prio, tc.data, tc.inline) + seq
			it, ok := parseItem(name)
			if !ok {
				t.Fatalf("parseItem(%q) failed", name)
			}
			want, _ := parseSeqText(seq)
			if it.seq != want || it.prio != tc.prio || it.hasIn != tc.inline {
				t.Errorf("parseItem(%q) = %+v", name, it)
			}
			if tc.inline && !bytes.Equal(it.inline, tc.data) {
				t.Errorf("parseItem(%q) inline = %q, want %q", name, it.inline, tc.data)
			}
			if got, ok := seqOf("/q/b-0000000000/" + name); !ok || got != want {
				t.Errorf("seqOf(%q) = %d, %v", name, got, ok)
			}
		}
	}
	for _, bad := range []string{"item-", "item-.", "item-.!!.0000000001", "item-.QQ", "item-x0000000001", "lock-0000000001"} {
		if it, ok := parseItem(bad); ok {
			t.Errorf("parseItem(%q) = %+v, want refused", bad, it)
		}
	}
}

// A full bucket of inline items stays within the listing budget, and the
// limit shrinks with the bucket size.
func TestInlineLimit(t *testing.T) {
	for _, size := range []int{1, 10, 100, 1000, DefaultBucketSize, 100000, 1 << 20} {
		n := inlineLimit(size)
		if n == 0 {
			continue
		}
		name := len(itemNamePrefix(false, 0, make([]byte, n), true)) + 10
		if size*(name+4) > inlineBudget {
			t.Errorf("bucket size %d: limit %d bytes gives %d-byte names, %d bytes listed", size, n, name, size*(name+4))
		}
	}
	if inlineLimit(DefaultBucketSize) < 16 {
		t.Errorf("default buckets inline only %d bytes", inlineLimit(DefaultBucketSize))
	}
	if inlineLimit(0) != 0 || inlineLimit(1<<20) != 0 {
		t.Error("no inline items without buckets or with huge ones")
	}
}
