package results

import (
	"net/url"
	"path"
	"strings"
)

// Roots are the paths the repository root (the workspace) is known by to
// the tools that write results: its host path, /workspace in containers,
// its path inside a sandbox. Paths under one of them are made relative.
type Roots []string

// errOutside marks a path outside the checkout.
const outsideReason = "outside the checkout"

// rel makes p (a path or a file:// URI) relative to the repository root;
// ok is false when it lies outside. "" stays "" (a finding about no file).
func (r Roots) rel(p string) (string, bool) {
	if p == "" {
		return "", true
	}
	if strings.HasPrefix(p, "file:") {
		u, err := url.Parse(p)
		if err != nil || (u.Host != "" && u.Host != "localhost") {
			return "", false
		}
		p = u.Path
		if p == "" {
			p = u.Opaque
		}
	}
	if path.IsAbs(p) {
		c := path.Clean(p)
		for _, root := range r {
			if root == "" {
				continue
			}
			root = path.Clean(root)
			if rest, ok := strings.CutPrefix(c, root+"/"); ok && root != "/" {
				return rest, true
			}
		}
		return "", false
	}
	c := path.Clean(strings.TrimPrefix(p, "./"))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// resolve joins a relative uri to the base URI named by a SARIF
// uriBaseId: a file:// base makes it absolute; an unknown base (CodeQL's
// %SRCROOT% without originalUriBaseIds) leaves it relative to the root.
func resolve(uri, base string) string {
	if base == "" || strings.Contains(uri, ":") || path.IsAbs(uri) {
		return uri
	}
	if u, err := url.Parse(base); err == nil && u.Scheme == "file" {
		p := u.Path
		if !strings.HasSuffix(p, "/") {
			p += "/"
		}
		return "file://" + (&url.URL{Path: p + uri}).EscapedPath()
	}
	return uri
}

// unescape decodes a relative SARIF uri reference (%20 ...).
func unescape(uri string) string {
	if strings.HasPrefix(uri, "file:") || !strings.Contains(uri, "%") {
		return uri
	}
	if s, err := url.PathUnescape(uri); err == nil {
		return s
	}
	return uri
}
