package locktree

import "testing"

// byteChooser takes a driver's choices from the fuzzer's bytes; when they
// run out every choice is 0 and done is set.
type byteChooser struct {
	b    []byte
	done bool
}

func (c *byteChooser) Intn(n int) int {
	if len(c.b) == 0 {
		c.done = true
		return 0
	}
	v := int(c.b[0])
	c.b = c.b[1:]
	if n > 256 && len(c.b) > 0 {
		v = v<<8 | int(c.b[0])
		c.b = c.b[1:]
	}
	return v % n
}

// FuzzTreeOps runs the model test's operations (acquire with conflict and
// coverage checks, release, release-all, conflict queries) as the fuzzer's
// bytes choose them, and compares the whole tree with the model after each
// one.
func FuzzTreeOps(f *testing.F) {
	f.Add([]byte{0, 0, 0, 5, 0, 1, 0, 3, 0, 5, 0, 4, 1})
	f.Add([]byte{1, 10, 9, 9, 9, 1, 2, 20, 9, 4, 200, 0, 2, 87, 0, 0, 90, 1})
	f.Add([]byte("shared overlaps: \x00\x01\x02\x03 then more \x57\x58\x59"))
	u := newUniverse()
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &byteChooser{b: data}
		d := newDriver(u)
		for i := 0; i < 200 && !c.done; i++ {
			if err := d.step(c); err != nil {
				d.fail(t, err)
			}
			if err := d.check(); err != nil {
				d.fail(t, err)
			}
		}
	})
}
