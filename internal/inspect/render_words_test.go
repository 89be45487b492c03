package inspect

import "testing"

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
