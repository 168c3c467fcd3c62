package keytable

import (
	"hash/maphash"
	"math/bits"
)

// Hash is a manager's seeded key hash. Keys of up to 16 bytes — the common
// case for row keys — take a short multiply-mix path in the style of
// wyhash (two 8-byte words, overlapping for 9..15 bytes, mixed with random
// secrets by 128-bit multiplication); longer keys use hash/maphash. Both
// are seeded per Hash, so collisions cannot be planned from outside.
type Hash struct {
	seed       maphash.Seed
	s0, s1, s2 uint64
}

// NewHash returns a Hash with a random seed.
func NewHash() Hash {
	seed := maphash.MakeSeed()
	return Hash{
		seed: seed,
		s0:   maphash.String(seed, "s0") | 1,
		s1:   maphash.String(seed, "s1") | 1,
		s2:   maphash.String(seed, "s2") | 1,
	}
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// Sum hashes a key; the []byte and string forms of one key hash alike.
func Sum[K string | []byte](k *Hash, key K) uint64 {
	n := len(key)
	if n > 16 {
		if s, ok := any(key).(string); ok {
			return maphash.String(k.seed, s)
		}
		return maphash.Bytes(k.seed, []byte(key))
	}
	var a, b uint64
	switch {
	case n >= 8:
		a, b = load64(key, 0), load64(key, n-8)
	case n >= 4:
		a, b = uint64(load32(key, 0)), uint64(load32(key, n-4))
	case n > 0:
		a = uint64(key[0])<<16 | uint64(key[n>>1])<<8 | uint64(key[n-1])
	}
	return mix(k.s2^uint64(n), mix(a^k.s0, b^k.s1))
}

func load64[K string | []byte](b K, i int) uint64 {
	b = b[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func load32[K string | []byte](b K, i int) uint32 {
	b = b[i : i+4]
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
