package keytable

// FreeSearch is how far TakeFree looks down a free list for an entry whose
// key buffer fits.
const FreeSearch = 4

// TakeFree unlinks and returns a recycled entry from the free list whose
// head is *head and whose links next returns. It prefers an entry whose key
// has keyLen bytes, among the first FreeSearch: SetKey then reuses its
// buffer, so that an engine that locks keys of several lengths (primary
// and secondary index entries, say) does not allocate a key on most
// requests. If none of those fits it returns nil while the list is
// shorter than FreeSearch, so that the list comes to hold every length in
// use, and else the last one it looked at, so that lengths no longer in
// use leave. E embeds Entry first, as Table requires. The caller owns the
// list (and its length count, if it keeps one).
func TakeFree[E any](head **E, next func(*E) **E, keyLen int) *E {
	var prev *E
	e := *head
	for i := 0; e != nil && len(keyOf(e)) != keyLen; i++ {
		if i == FreeSearch-1 {
			break // e is the last one looked at
		}
		prev, e = e, *next(e)
	}
	if e == nil {
		return nil
	}
	if prev == nil {
		*head = *next(e)
	} else {
		*next(prev) = *next(e)
	}
	*next(e) = nil
	return e
}
