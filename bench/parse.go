package bench

import (
	"strconv"
	"strings"
)

// JoinLocks renders a lock list as the --lock flag takes it: "point,range".
func JoinLocks(ls []LockKind) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = string(l)
	}
	return strings.Join(parts, ",")
}

// JoinInts renders an int list as the --threads flag takes it: "1,2,4".
func JoinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}
