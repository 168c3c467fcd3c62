package keytable

import "unsafe"

// Entry is the header of a Table's entries: the key, in a buffer the entry
// owns. Embed it as the first field of the entry type.
type Entry struct {
	key string
}

// Key returns the entry's key. The string is valid while the entry is not
// recycled (SetKey may overwrite its bytes): callers that keep it longer
// copy it.
func (e *Entry) Key() string { return e.key }

// KeyBytes returns the key as a byte slice over the entry's buffer; it
// must not be modified, and is valid as long as Key's result.
func (e *Entry) KeyBytes() []byte {
	return unsafe.Slice(unsafe.StringData(e.key), len(e.key))
}

// SetKey makes key the entry's key. A recycled entry whose key has the
// same length keeps its buffer: the new key is copied into it, so that
// locking a fresh key allocates nothing. This is the one place where a
// string's bytes are written; it is sound because the buffer was allocated
// here (never a literal or a runtime static), and the owners of entries
// keep no reference to a key past its entry's recycling (every reader
// copies it, or reads it under the owner's mutex while the entry is live).
func (e *Entry) SetKey(key []byte) {
	if n := len(key); n > 0 && n == len(e.key) {
		copy(unsafe.Slice(unsafe.StringData(e.key), n), key)
		return
	}
	e.key = ownedString(key)
}

// ownedString copies key into a new heap buffer owned by the entry.
func ownedString(key []byte) string {
	if len(key) == 0 {
		return ""
	}
	b := make([]byte, len(key))
	copy(b, key)
	return unsafe.String(&b[0], len(b))
}

// SetProbe points the entry at key without copying it, for an entry used
// only as a search key (a B-tree probe); it must never be recycled with
// SetKey while pointing at a caller's bytes.
func (e *Entry) SetProbe(key string) { e.key = key }
