package protomodel

import (
	"hash/maphash"
	"time"
)

// Target selects the counterexamples a search is after: a violation of
// kind in a schedule whose events are flags. Nil accepts any.
type Target func(kind string, flags uint16) bool

// Violation is a counterexample: a schedule that ends in a state where a
// backup reported ready does not restore.
type Violation struct {
	Kind, Detail string
	Flags        uint16
	Trace        []string // one line per move, from the initial state
}

// Result is what one search found and how much it explored.
type Result struct {
	Scope     string
	States    int // distinct states reached
	Edges     int // moves made (schedules' steps, before merging)
	MaxDepth  int
	Elapsed   time.Duration
	Violation *Violation // nil: none matching the target
	Complete  bool       // every reachable state was explored
}

// DefaultLimit bounds the states one search may visit.
const DefaultLimit = 30_000_000

type checker struct {
	sc      *Scope
	want    Target
	seed    maphash.Seed
	visited map[uint64]struct{}
	path    []move
	bufs    [][]move
	res     Result
	limit   int
}

// Check explores every schedule of sc depth first, merging equal states,
// and stops at the first violation want accepts.
func Check(sc Scope, want Target, limit int) Result {
	if limit <= 0 {
		limit = DefaultLimit
	}
	c := &checker{sc: &sc, want: want, seed: maphash.MakeSeed(), visited: map[uint64]struct{}{}, limit: limit}
	c.res.Scope = sc.String()
	begin := time.Now()
	s := sc.initial()
	c.visited[maphash.Comparable(c.seed, s)] = struct{}{}
	c.res.Complete = !c.found(&s) && c.dfs(&s)
	c.res.States = len(c.visited)
	c.res.Elapsed = time.Since(begin)
	return c.res
}

// dfs explores the successors of s; it reports false once the search
// stops (a target violation was found or the limit was reached).
func (c *checker) dfs(s *State) bool {
	d := len(c.path)
	if d >= len(c.bufs) {
		c.bufs = append(c.bufs, make([]move, 0, 32))
	}
	ms := moves(s, c.sc, c.bufs[d][:0])
	c.bufs[d] = ms
	c.res.MaxDepth = max(c.res.MaxDepth, d)
	for _, m := range ms {
		t := *s
		apply(&t, c.sc, m)
		c.res.Edges++
		h := maphash.Comparable(c.seed, t)
		if _, seen := c.visited[h]; seen {
			continue
		}
		if len(c.visited) >= c.limit {
			return false
		}
		c.visited[h] = struct{}{}
		c.path = append(c.path, m)
		if c.found(&t) || !c.dfs(&t) {
			return false
		}
		c.path = c.path[:d]
	}
	return true
}

// found checks the invariant in s and records a counterexample the target
// accepts.
func (c *checker) found(s *State) bool {
	kind, detail := violation(s, c.sc)
	if kind == "" || (c.want != nil && !c.want(kind, s.flags)) {
		return false
	}
	c.res.Violation = &Violation{Kind: kind, Detail: detail, Flags: s.flags, Trace: render(c.sc, c.path)}
	return true
}
