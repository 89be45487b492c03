package inspect

import (
	"fmt"
	"slices"
	"testing"
)

func TestValueWords(t *testing.T) {
	text := "plain\nline"
	for _, c := range []struct {
		v    Value
		want string
	}{
		{valueOf([]byte(`{"host":"c","pid":0}`)), "host c · pid 0"},
		{valueOf([]byte(`{"b":{"x":1},"a":"y"}`)), `b {"x":1} · a y`}, // the payload's order
		{valueOf([]byte(`"name"`)), "name"},
		{valueOf([]byte(`{}`)), "{}"},
		{valueOf([]byte(`[1,2]`)), "[1,2]"},
		{valueOf([]byte(`7`)), "7"},
		{Value{Text: &text}, "plain?line"},
		{valueOf([]byte{0xff, 0}), "base64:/wA="},
	} {
		if got := c.v.Words(); got != c.want {
			t.Errorf("Words of %s = %q, want %q", c.v, got, c.want)
		}
	}
}

// A queue's consumers and the five items held longest are listed under
// it in words; the rest are counted, for --json lists them all.
func TestQueueClaimsText(t *testing.T) {
	q := &QueueState{Depth: 9, Claimed: 7, Consumers: []QueueConsumer{
		{Session: "0xa", Claimed: 6, AgeSeconds: 250}, {Session: "0xb", Claimed: 1, AgeSeconds: 3}}}
	for i := range 7 {
		sess := "0xa"
		if i == 6 {
			sess = "0xb"
		}
		q.Claims = append(q.Claims, QueueClaim{Item: fmt.Sprintf("/q/b-0000000000/item-%010d", i), Session: sess, AgeSeconds: 250, Attempt: 1 + i%3})
	}
	if got, want := q.summary(), "9 items, 7 claimed by 2 consumers"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	got := q.details()
	want := [][3]string{
		{"consumer", "session 0xa", "holds 6 items, the longest for 4m10s"},
		{"consumer", "session 0xb", "holds 1 item, for 3s"},
		{"claimed", "item-0000000000", "by session 0xa for 4m10s"},
		{"claimed", "item-0000000001", "by session 0xa for 4m10s, delivery 2"},
		{"claimed", "item-0000000002", "by session 0xa for 4m10s, delivery 3"},
		{"claimed", "item-0000000003", "by session 0xa for 4m10s"},
		{"claimed", "item-0000000004", "by session 0xa for 4m10s, delivery 2"},
		{"claimed", "2 more", "(--json lists them all)"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("details\n got %q\nwant %q", got, want)
	}
}
