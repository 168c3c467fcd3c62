// Package keytable is the open-addressing hash table of locked keys behind
// internal/locktable's Table (a stripe's 64-bit key hash → entry map, with
// entries that own, and, recycled, reuse, their key buffer), and the
// seeded key hash both managers use.
//
// An entry type E embeds Entry as its first field; Table[E] reads the key
// through that header, so a probe compares keys without an indirect call
// (Valid[E] checks the layout; each user tests it).
//
//	Table[E]  slots: [h|*E] [h|*E] [    ] [h|*E] ...   (linear probing,
//	                    │                               home = high bits of h)
//	                    ▼
//	                  E { Entry{key}, the user's fields... }
//
// A Table is not safe for concurrent use: its owner's mutex guards it.
package keytable
