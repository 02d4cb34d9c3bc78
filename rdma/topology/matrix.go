package topology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Matrix is a priority matrix in Mooncake's form: a location ("cpu:N",
// "cuda:N", "*") maps to [preferred NICs, available NICs]. It has the
// type of metadata.SegmentDesc.PriorityMatrix, so it can be published as
// is. Lists are never nil in a Matrix made by this package, so they encode
// as [] rather than null.
type Matrix map[string][2][]string

// ParseMatrix decodes Mooncake's priority-matrix JSON strictly: every
// value must be an array of exactly two arrays of non-empty NIC names.
func ParseMatrix(data []byte) (Matrix, error) {
	var raw map[string][][]string
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadMatrix, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: not a JSON object", ErrBadMatrix)
	}
	m := make(Matrix, len(raw))
	for loc, v := range raw {
		if loc == "" {
			return nil, fmt.Errorf("%w: empty location key", ErrBadMatrix)
		}
		if len(v) != 2 {
			return nil, fmt.Errorf("%w: location %q has %d lists, want 2 ([preferred, available])", ErrBadMatrix, loc, len(v))
		}
		for _, l := range v {
			for _, n := range l {
				if n == "" {
					return nil, fmt.Errorf("%w: location %q lists an empty NIC name", ErrBadMatrix, loc)
				}
			}
		}
		m[loc] = [2][]string{nonNil(v[0]), nonNil(v[1])}
	}
	return m, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// MarshalJSON writes the matrix with sorted keys and [] for empty lists.
func (m Matrix) MarshalJSON() ([]byte, error) {
	plain := make(map[string][2][]string, len(m))
	for k, v := range m {
		plain[k] = [2][]string{nonNil(v[0]), nonNil(v[1])}
	}
	return json.Marshal(plain)
}

// Filter returns a copy of m that keeps only NICs for which keep is true.
func (m Matrix) Filter(keep func(string) bool) Matrix {
	out := make(Matrix, len(m))
	for k, v := range m {
		var e [2][]string
		for i := range v {
			e[i] = []string{}
			for _, n := range v[i] {
				if keep(n) {
					e[i] = append(e[i], n)
				}
			}
		}
		out[k] = e
	}
	return out
}

// HCAs returns the HCA list the matrix implies, Mooncake's way: locations
// in sorted order, each one's preferred then available NICs, first
// occurrence wins. Key and device indices in descriptors follow it.
func (m Matrix) HCAs() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[string]bool{}
	var out []string
	for _, k := range keys {
		for _, l := range m[k] {
			for _, n := range l {
				if !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// Choice is one location's NICs as indices into an HCA list.
type Choice struct {
	Preferred []int
	Available []int
}

// Len is the number of candidates.
func (c Choice) Len() int { return len(c.Preferred) + len(c.Available) }

// At returns candidate i, preferred ones first (i < Len()).
func (c Choice) At(i int) int {
	if i < len(c.Preferred) {
		return c.Preferred[i]
	}
	return c.Available[i-len(c.Preferred)]
}

// Resolved is a matrix with names turned into indices of an HCA list, for
// allocation-free lookups on the data path.
type Resolved struct {
	byLoc map[string]Choice
	all   Choice
}

// Resolve maps m onto hcas (a descriptor's device order). Names not in
// hcas are dropped. The "*" entry, or else every HCA, answers locations
// the matrix does not name.
func (m Matrix) Resolve(hcas []string) *Resolved {
	idx := make(map[string]int, len(hcas))
	for i, n := range hcas {
		idx[n] = i
	}
	conv := func(l []string) []int {
		out := make([]int, 0, len(l))
		for _, n := range l {
			if i, ok := idx[n]; ok {
				out = append(out, i)
			}
		}
		return out
	}
	r := &Resolved{byLoc: make(map[string]Choice, len(m))}
	for k, v := range m {
		r.byLoc[k] = Choice{Preferred: conv(v[0]), Available: conv(v[1])}
	}
	if c, ok := r.byLoc["*"]; ok && c.Len() > 0 {
		r.all = c
	} else {
		all := make([]int, len(hcas))
		for i := range all {
			all[i] = i
		}
		r.all = Choice{Preferred: all}
	}
	return r
}

// Lookup returns the candidates for a location. An unknown location, or
// one whose entry names no usable NIC, gets the "*" candidates.
func (r *Resolved) Lookup(location string) Choice {
	if c, ok := r.byLoc[location]; ok && c.Len() > 0 {
		return c
	}
	return r.all
}
