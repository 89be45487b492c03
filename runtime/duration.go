package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// JSONDuration is a time.Duration as generated payload types store it in
// JSON: a Go duration string ("1m30s", as time.Duration.String writes it).
// Decoding also accepts the integer nanoseconds that zkgen's generated
// types wrote before, so values stored by older processes still read.
// Generated MarshalJSON and UnmarshalJSON methods use it through a pointer
// conversion, (*JSONDuration)(&v.Field); the fields stay time.Duration.
type JSONDuration time.Duration

// MarshalJSON writes d as a duration string.
func (d JSONDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string ("1s", "-1.5h", "0s"; as
// time.ParseDuration takes them) or an integer number of nanoseconds. null
// leaves d as it is, as encoding/json does for other types.
func (d *JSONDuration) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	switch {
	case bytes.Equal(data, []byte("null")):
		return nil
	case len(data) > 0 && data[0] == '"':
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want a Go duration like \"1m30s\"", s)
		}
		*d = JSONDuration(v)
		return nil
	}
	n, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return fmt.Errorf("duration %s: want a string like \"1m30s\" or integer nanoseconds", data)
	}
	*d = JSONDuration(n)
	return nil
}

// JSONDurations is a []time.Duration stored as a JSON array of duration
// strings; decoding accepts strings and integer nanoseconds, mixed.
// Generated code converts a field with (*JSONDurations)(&v.Field).
type JSONDurations []time.Duration

// MarshalJSON writes ds as an array of duration strings (null when nil,
// as encoding/json writes a nil slice).
func (ds JSONDurations) MarshalJSON() ([]byte, error) {
	if ds == nil {
		return []byte("null"), nil
	}
	out := make([]JSONDuration, len(ds))
	for i, d := range ds {
		out[i] = JSONDuration(d)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads an array of duration strings or integer nanoseconds.
func (ds *JSONDurations) UnmarshalJSON(data []byte) error {
	var in []JSONDuration
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	if in == nil {
		*ds = nil
		return nil
	}
	out := make(JSONDurations, len(in))
	for i, d := range in {
		out[i] = time.Duration(d)
	}
	*ds = out
	return nil
}
