package lockwait

import "iter"

// Queue is an intrusive FIFO list of waiters. It is guarded by the lock of
// the manager structure that owns it; a Waiter is in at most one Queue.
// The zero Queue is empty and ready to use.
type Queue struct {
	head, tail *Waiter
	n          int
}

// Len is the number of linked waiters (failed ones not yet unlinked
// included).
func (q *Queue) Len() int { return q.n }

// Front returns the first waiter, or nil.
func (q *Queue) Front() *Waiter { return q.head }

// Back returns the last waiter, or nil.
func (q *Queue) Back() *Waiter { return q.tail }

// Next returns the waiter after w in its queue, or nil.
func (w *Waiter) Next() *Waiter { return w.next }

// Prev returns the waiter before w in its queue, or nil.
func (w *Waiter) Prev() *Waiter { return w.prev }

// Backward yields the active waiters from w to the front of its queue,
// nearest first: a walk back from a request to the requests ahead of it.
func Backward(w *Waiter) iter.Seq[*Waiter] {
	return func(yield func(*Waiter) bool) {
		for ; w != nil; w = w.prev {
			if w.Active() && !yield(w) {
				return
			}
		}
	}
}

// PushBack appends w (a new request joins the end of the line).
func (q *Queue) PushBack(w *Waiter) {
	w.queue, w.prev, w.next = q, q.tail, nil
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.n++
}

// InsertBefore links w just before at, or at the back if at is nil. Upgrades
// use it to go ahead of ordinary requests but behind earlier upgrades.
func (q *Queue) InsertBefore(w, at *Waiter) {
	if at == nil {
		q.PushBack(w)
		return
	}
	w.queue, w.next, w.prev = q, at, at.prev
	if at.prev != nil {
		at.prev.next = w
	} else {
		q.head = w
	}
	at.prev = w
	q.n++
}

// Remove unlinks w; a no-op if w is not in q.
func (q *Queue) Remove(w *Waiter) {
	if w.queue != q {
		return
	}
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.next, w.prev, w.queue = nil, nil, nil
	q.n--
}
