package forge

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/hookrun/hookrun/workflows"
)

// Links is how a forge lays out its web pages and names its pull (merge)
// requests, for the pages that link to a run's forge (ingress/ui), the
// text of a run's comment and the draft it opens, and the git ref a
// checkout fetches. Each forge's Links fills in what differs; an empty
// field takes the layout most forges share (its default below), so the
// zero Links, which a forge that is not configured answers, links nothing
// of its own (Web "") and lays out the rest the common way.
type Links struct {
	// Web is the forge's web origin, scheme://host[:port] (its git
	// origin), for the pages of a repository whose event names no clone
	// URL; "": none.
	Web string
	// Pages is what joins a repository's web URL and its pages; default
	// "/".
	Pages string
	// Request is what the forge calls a pull request in text; default
	// "pull request".
	Request string
	// RequestPath and IssuePath are the pages of a pull request and of an
	// issue, numbered, under the repository's pages; default "pull" and
	// "issues".
	RequestPath string
	IssuePath   string
	// Mark is put before a pull request's number in text; default "#".
	Mark string
	// CommentAnchor is put before a comment's id on its pull request's or
	// issue's page; default "#issuecomment-".
	CommentAnchor string
	// HeadRef is the git ref of pull request %d's head; default
	// "refs/pull/%d/head".
	HeadRef string
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// pages is repoURL's page path (joined with Pages).
func (l Links) pages(repoURL, path string) string { return repoURL + or(l.Pages, "/") + path }

// Repo is the web URL of a repository: its clone URL without ".git" when
// that is an http(s) URL (so a self-hosted forge links to itself), else
// Web and its path repo; "" when neither is known.
func (l Links) Repo(cloneURL, repo string) string {
	switch {
	case WebURL(cloneURL):
		return strings.TrimSuffix(strings.TrimRight(cloneURL, "/"), ".git")
	case repo != "" && l.Web != "":
		return strings.TrimRight(l.Web, "/") + "/" + repo
	}
	return ""
}

// Change is the page of pull request n (pull) or of issue n of the
// repository at repoURL.
func (l Links) Change(repoURL string, n int, pull bool) string {
	if pull {
		return l.pages(repoURL, or(l.RequestPath, "pull")+"/"+strconv.Itoa(n))
	}
	return l.pages(repoURL, or(l.IssuePath, "issues")+"/"+strconv.Itoa(n))
}

// Comment is the link to comment id on the page changeURL.
func (l Links) Comment(changeURL string, id int64) string {
	return changeURL + or(l.CommentAnchor, "#issuecomment-") + strconv.FormatInt(id, 10)
}

// Commit is the page of commit sha of the repository at repoURL.
func (l Links) Commit(repoURL, sha string) string { return l.pages(repoURL, "commit/"+sha) }

// Tree is the page of branch of the repository at repoURL.
func (l Links) Tree(repoURL, branch string) string { return l.pages(repoURL, "tree/"+branch) }

// Compare is the page of branch's commits after base.
func (l Links) Compare(repoURL, base, branch string) string {
	return l.pages(repoURL, "compare/"+base+"..."+branch)
}

// RequestName is what the forge calls a pull request ("pull request").
func (l Links) RequestName() string { return or(l.Request, "pull request") }

// RequestText is how the forge's text refers to pull request n ("#n").
func (l Links) RequestText(n int) string { return or(l.Mark, "#") + strconv.Itoa(n) }

// RequestHead is the git ref of pull request n's head.
func (l Links) RequestHead(n int) string {
	return strings.Replace(or(l.HeadRef, "refs/pull/%d/head"), "%d", strconv.Itoa(n), 1)
}

// WebURL reports whether s is an absolute http(s) URL with a host: the
// only links worth showing.
func WebURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Links of the forge named name (Get's Links): the zero Links for a forge
// nothing registered.
func (r *Registry) Links(name workflows.Forge) Links { return r.Get(name).Links() }

// Links of a forge that is not configured are the zero Links: nothing
// of its own to link to.
func (n notConfigured) Links() Links { return Links{} }
