package workflows

import (
	"errors"
	"fmt"
	"strings"
)

// Repository globs name the repositories a server acts for (the server's
// `allow_repos`). A pattern is matched against a repository path,
// "owner/name", or "group/sub/project" on a forge that nests groups:
//
//   - `*` matches any run of characters within one path segment (never `/`),
//   - `**` matches any run of characters, `/` included (any depth of
//     subgroups),
//   - `?` matches one character other than `/`,
//   - everything else matches itself, compared case-insensitively (ASCII), as
//     forges compare repository names.
//
// So `myorg/*` is every repository of myorg, `mygroup/**` every project
// under mygroup at any depth, and `**` every repository.

// maxRepoPattern bounds a pattern's length (it sizes the matcher's state).
const maxRepoPattern = 256

// CheckRepoPattern reports why pattern is not a repository glob. A valid one
// is `**`, or path segments separated by single slashes, each non-empty, of
// letters, digits, `-`, `_`, `.` and the wildcards; at most two `*` in a
// row; at most 256 bytes.
func CheckRepoPattern(pattern string) error {
	switch {
	case pattern == "":
		return errors.New("empty repository pattern")
	case len(pattern) > maxRepoPattern:
		return fmt.Errorf("repository pattern longer than %d bytes", maxRepoPattern)
	case pattern == "**":
		return nil
	case !strings.Contains(pattern, "/"):
		return fmt.Errorf("repository pattern %q has no slash: want owner/name (e.g. %q), or ** for every repository", pattern, pattern+"/*")
	case strings.HasPrefix(pattern, "/") || strings.HasSuffix(pattern, "/") || strings.Contains(pattern, "//"):
		return fmt.Errorf("repository pattern %q has an empty path segment", pattern)
	case strings.Contains(pattern, "***"):
		return fmt.Errorf("repository pattern %q has more than two * in a row", pattern)
	}
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '/' || c == '*' || c == '?') {
			return fmt.Errorf("repository pattern %q contains %q: want letters, digits, - _ . / and the wildcards * ** ?", pattern, c)
		}
	}
	return nil
}

// MatchRepo reports whether repo matches pattern (see CheckRepoPattern for
// the syntax; a pattern it refuses matches nothing). It runs in time
// proportional to len(pattern)·len(repo) and does not allocate.
func MatchRepo(pattern, repo string) bool {
	if repo == "" || CheckRepoPattern(pattern) != nil {
		return false
	}
	// A simulation of the pattern's automaton: on[i] means pattern[:i] has
	// matched the input read so far.
	var cur, next [maxRepoPattern + 1]bool
	n := len(pattern)
	closure := func(on *[maxRepoPattern + 1]bool) {
		// A wildcard may match nothing: its state also enables the one after
		// it. Wildcards only lead forward, so one pass suffices.
		for i := 0; i < n; i++ {
			if on[i] && pattern[i] == '*' {
				on[i+starLen(pattern, i)] = true
			}
		}
	}
	cur[0] = true
	closure(&cur)
	for j := 0; j < len(repo); j++ {
		c := lower(repo[j])
		clear(next[:n+1])
		alive := false
		for i := 0; i < n; i++ {
			if !cur[i] {
				continue
			}
			switch p := pattern[i]; {
			case p == '*' && starLen(pattern, i) == 2:
				next[i] = true // ** consumes anything and stays
			case p == '*':
				if c != '/' {
					next[i] = true
				}
			case p == '?':
				if c != '/' {
					next[i+1] = true
				}
			case lower(p) == c:
				next[i+1] = true
			default:
				continue
			}
			alive = true
		}
		if !alive {
			return false
		}
		closure(&next)
		cur = next
	}
	return cur[n]
}

// AnyRepo reports whether repo matches one of patterns.
func AnyRepo(patterns []string, repo string) bool {
	for _, p := range patterns {
		if MatchRepo(p, repo) {
			return true
		}
	}
	return false
}

// starLen is the length of the wildcard at pattern[i] (a '*'): 2 for `**`,
// else 1. The second byte of a `**` is never a state of its own.
func starLen(pattern string, i int) int {
	if i+1 < len(pattern) && pattern[i+1] == '*' {
		return 2
	}
	return 1
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
