package runtime

import (
	"encoding/json"
	"fmt"
)

// Codec encodes payloads of type T to znode data and back. Generated code
// picks one per payload: BytesCodec for bytes, StringCodec for string,
// JSONCodec for everything else.
type Codec[T any] interface {
	Encode(v T) ([]byte, error)
	Decode(data []byte) (T, error)
}

type bytesCodec struct{}

func (bytesCodec) Encode(v []byte) ([]byte, error)    { return v, nil }
func (bytesCodec) Decode(data []byte) ([]byte, error) { return data, nil }

// BytesCodec stores []byte payloads as they are.
func BytesCodec() Codec[[]byte] { return bytesCodec{} }

type stringCodec struct{}

func (stringCodec) Encode(v string) ([]byte, error)    { return []byte(v), nil }
func (stringCodec) Decode(data []byte) (string, error) { return string(data), nil }

// StringCodec stores string payloads as raw UTF-8.
func StringCodec() Codec[string] { return stringCodec{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Encode(v T) ([]byte, error) { return json.Marshal(v) }

func (jsonCodec[T]) Decode(data []byte) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	return v, nil
}

// JSONCodec stores payloads as JSON (encoding/json).
func JSONCodec[T any]() Codec[T] { return jsonCodec[T]{} }
