package latch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// This file checks the latch's protocol exhaustively: a model of Lock and
// Unlock, one atomic step per state-word operation or channel operation,
// is run through every interleaving of a few goroutines that each take the
// latch a few times. In every reachable state at most one goroutine is in
// its critical section, and no state is reached in which every goroutine
// not yet finished is asleep on the channel (a lost wake-up: the stress
// tests can only hope to hit one, the model finds it if it exists).
//
// The model follows latch.go step by step; a change to the protocol there
// must be made here too (the step names are the code's).

// pc is where a model goroutine is in Lock or Unlock.
type pc uint8

const (
	pcCAS    pc = iota // Lock's fast path: CAS unlocked → locked
	pcRetry            // one of lockSlow's retries: CAS unlocked → locked
	pcSwap             // lockSlow: Swap(contended), acquired if it was unlocked
	pcRecv             // lockSlow: <-wake
	pcAsleep           // blocked in <-wake, on the channel's receive queue
	pcHeld             // in the critical section
	pcAdd              // Unlock: Add(-1), done if the result is unlocked
	pcStore            // unlockSlow: Store(unlocked)
	pcSend             // unlockSlow: non-blocking send of the token
	pcDone             // finished all its acquisitions
)

// modelG is one goroutine of the model.
type modelG struct {
	pc      pc
	left    uint8 // acquisitions still to make, the current one included
	retries uint8 // retries left in this lockSlow
}

// modelState is the whole machine: the latch's state word, the channel's
// buffer (0 or 1 token) and receive queue, and the goroutines.
type modelState struct {
	word  int32
	token bool
	recvq []int // goroutine indices asleep in <-wake, in arrival order
	gs    []modelG
}

func (s modelState) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d/%t/%v/", s.word, s.token, s.recvq)
	for _, g := range s.gs {
		fmt.Fprintf(&b, "%d.%d.%d,", g.pc, g.left, g.retries)
	}
	return b.String()
}

func (s modelState) clone() modelState {
	c := s
	c.recvq = append([]int(nil), s.recvq...)
	c.gs = append([]modelG(nil), s.gs...)
	return c
}

// modelConfig chooses the model's size and, for the checker's own test, a
// broken protocol.
type modelConfig struct {
	goroutines, each, retries int
	// brokenDropToken makes unlockSlow never send: the checker must find
	// the lost wake-up.
	brokenDropToken bool
	// brokenNoStore makes unlockSlow skip its Store(unlocked): the checker
	// must find goroutines asleep on a latch nobody holds.
	brokenNoStore bool
}

// step runs goroutine i's next atomic step in s (a copy) and returns the
// result, or an error for a protocol violation (Unlock of an unlocked
// latch).
func (cfg modelConfig) step(s modelState, i int) (modelState, error) {
	s = s.clone()
	g := &s.gs[i]
	cas := func() bool {
		if s.word == unlocked {
			s.word = locked
			return true
		}
		return false
	}
	switch g.pc {
	case pcCAS:
		if cas() {
			g.pc = pcHeld
		} else if cfg.retries > 0 {
			g.pc, g.retries = pcRetry, uint8(cfg.retries)
		} else {
			g.pc = pcSwap
		}
	case pcRetry:
		g.retries--
		switch {
		case cas():
			g.pc, g.retries = pcHeld, 0
		case g.retries == 0:
			g.pc = pcSwap
		}
	case pcSwap:
		old := s.word
		s.word = contended
		if old == unlocked {
			g.pc = pcHeld
		} else {
			g.pc = pcRecv
		}
	case pcRecv:
		if s.token {
			s.token = false
			g.pc = pcSwap
		} else {
			g.pc = pcAsleep
			s.recvq = append(s.recvq, i)
		}
	case pcHeld:
		g.pc = pcAdd
	case pcAdd:
		s.word--
		switch s.word {
		case unlocked:
			g.pc = finish(g)
		case contended - 1:
			g.pc = pcStore
			if cfg.brokenNoStore {
				g.pc = pcSend
			}
		default:
			return s, fmt.Errorf("goroutine %d: Unlock of unlocked latch (word %d)", i, s.word)
		}
	case pcStore:
		s.word = unlocked
		g.pc = pcSend
	case pcSend:
		switch {
		case cfg.brokenDropToken:
		case len(s.recvq) > 0: // a waiting receiver takes the token directly
			s.gs[s.recvq[0]].pc = pcSwap
			s.recvq = s.recvq[1:]
		case !s.token:
			s.token = true
		default: // the buffer is full: drop it
		}
		g.pc = finish(g)
	default:
		return s, fmt.Errorf("goroutine %d: step from pc %d", i, g.pc)
	}
	return s, nil
}

// finish ends one acquisition of g and returns its next pc.
func finish(g *modelG) pc {
	g.left--
	if g.left == 0 {
		return pcDone
	}
	return pcCAS
}

// modelResult is what an exhaustive exploration found.
type modelResult struct {
	states int
	// problem describes the first violation found, "" if none.
	problem string
}

// explore visits every state reachable from the start (depth first) and
// checks each one.
func (cfg modelConfig) explore() modelResult {
	start := modelState{gs: make([]modelG, cfg.goroutines)}
	for i := range start.gs {
		start.gs[i] = modelG{pc: pcCAS, left: uint8(cfg.each)}
	}
	seen := map[string]bool{start.key(): true}
	stack := []modelState{start}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		held, runnable, done := 0, 0, 0
		for _, g := range s.gs {
			switch g.pc {
			case pcHeld, pcAdd:
				held++
			case pcDone:
				done++
			}
			if g.pc != pcAsleep && g.pc != pcDone {
				runnable++
			}
		}
		if held > 1 {
			return modelResult{len(seen), "two goroutines hold the latch: " + s.key()}
		}
		if s.token && len(s.recvq) > 0 {
			return modelResult{len(seen), "a token is buffered while receivers sleep: " + s.key()}
		}
		if runnable == 0 && done < len(s.gs) {
			return modelResult{len(seen), "every unfinished goroutine is asleep (lost wake-up): " + s.key()}
		}
		for i := range s.gs {
			if s.gs[i].pc == pcAsleep || s.gs[i].pc == pcDone {
				continue
			}
			next, err := cfg.step(s, i)
			if err != nil {
				return modelResult{len(seen), err.Error()}
			}
			if k := next.key(); !seen[k] {
				seen[k] = true
				stack = append(stack, next)
			}
		}
	}
	return modelResult{states: len(seen)}
}

// TestModelEveryInterleaving explores the protocol with up to four
// goroutines; retries are modelled as one or two CAS attempts, since a
// retry only ever takes an unlocked latch (Retries = 400 in the code is
// the same step repeated).
func TestModelEveryInterleaving(t *testing.T) {
	for _, cfg := range []modelConfig{
		{goroutines: 2, each: 3, retries: 1},
		{goroutines: 3, each: 2, retries: 0},
		{goroutines: 3, each: 2, retries: 2},
		{goroutines: 3, each: 3, retries: 1},
		{goroutines: 4, each: 2, retries: 1},
	} {
		t.Run(fmt.Sprintf("g%d_each%d_retries%d", cfg.goroutines, cfg.each, cfg.retries), func(t *testing.T) {
			if testing.Short() && cfg.goroutines*cfg.each > 8 {
				t.Skip("large model in -short")
			}
			res := cfg.explore()
			require.Empty(t, res.problem)
			t.Logf("%d states, no violation", res.states)
			require.Greater(t, res.states, 100, "the model explored almost nothing")
		})
	}
}

// TestModelFindsBrokenProtocols: the checker is able to fail; a latch
// whose Unlock loses its token, or leaves the word contended, is caught.
func TestModelFindsBrokenProtocols(t *testing.T) {
	res := modelConfig{goroutines: 2, each: 2, retries: 1, brokenDropToken: true}.explore()
	require.Contains(t, res.problem, "lost wake-up")
	res = modelConfig{goroutines: 2, each: 2, retries: 1, brokenNoStore: true}.explore()
	require.Contains(t, res.problem, "lost wake-up")
}
