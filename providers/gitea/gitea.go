package gitea

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/hookrun/hookrun/providers/github"
	"github.com/hookrun/hookrun/workflows"
)

// Config says how to reach a Gitea or Forgejo server and as whom.
type Config struct {
	// BaseURL is the server's web root (its ROOT_URL), such as
	// https://gitea.example/ or https://codeberg.org/; the API is under
	// api/v1/ of it. Required: there is no default Gitea.
	BaseURL string
	// Token is an access token of the account hookrun comments as (scopes
	// write:issue, write:repository, read:user); sent as "Authorization:
	// token". Reading other users' permissions needs the account to be an
	// admin of the repository. Never logged.
	Token string
	// RunURL links the run from the comment and the commit status; "{run}"
	// is replaced by the run id. "" = no link.
	RunURL string
	// Transport sends the HTTP requests; nil = the github package's default.
	Transport http.RoundTripper
	// WrapTransport, when set, wraps Transport once (trace spans).
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// WebhookEnabled serves POST /hooks/gitea (ingress); false: the route
	// answers 404. The forge is registered either way (its git origin).
	WebhookEnabled bool
	// WebhookSecrets are the webhook secrets X-Gitea-Signature is checked
	// against: a delivery signed with any of them is accepted (several
	// allow rotation). Empty: the deliveries are accepted unverified only
	// under --insecure-no-verify. Never logged.
	WebhookSecrets []string
	// Logger receives retries and fallbacks (never tokens); nil = slog.Default().
	Logger *slog.Logger
}

// Validate reports what is wrong with c. Errors never include the token.
func (c Config) Validate() error {
	var errs []error
	if _, err := APIURL(c.BaseURL); err != nil {
		errs = append(errs, err)
	}
	if c.Token == "" {
		errs = append(errs, errors.New("gitea: set a token"))
	}
	return errors.Join(errs...)
}

// APIURL is the REST API root of the server at baseURL: baseURL/api/v1/.
func APIURL(baseURL string) (string, error) {
	u, err := parseBase(baseURL)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(u.String(), "/") + "/api/v1/", nil
}

// GitOrigin is the origin, scheme://host[:port], that repositories of the
// server at baseURL are cloned from.
func GitOrigin(baseURL string) (string, error) {
	u, err := parseBase(baseURL)
	if err != nil {
		return "", err
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host), nil
}

func parseBase(baseURL string) (*url.URL, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("gitea base_url %q: want the server's http(s) root such as https://gitea.example/", baseURL)
	}
	if strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v1") {
		return nil, fmt.Errorf("gitea base_url %q: want the server's web root, without api/v1", baseURL)
	}
	return u, nil
}

// Reporter reports runs on a Gitea or Forgejo server and looks up what
// ingress asks: pull request heads, changed files, authors' permissions.
// It is safe for concurrent use.
type Reporter struct {
	*github.Reporter
}

// New checks cfg and returns a Reporter. No request is made yet.
func New(cfg Config) (*Reporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	api, _ := APIURL(cfg.BaseURL)
	r, err := github.New(github.Config{Forge: workflows.Gitea, APIURL: api, Token: cfg.Token, RunURL: cfg.RunURL,
		Transport: cfg.Transport, WrapTransport: cfg.WrapTransport, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	return &Reporter{Reporter: r}, nil
}

// Association maps a Gitea permission to an author association: owner →
// OWNER; admin and write → MEMBER; read → COLLABORATOR for a collaborator
// of the repository; anything else NONE.
func Association(permission string, collaborator bool) string {
	switch permission {
	case "owner":
		return "OWNER"
	case "admin", "write":
		return "MEMBER"
	case "read":
		if collaborator {
			return "COLLABORATOR"
		}
	}
	return "NONE"
}

// CollaboratorAssociation implements workflows.CollaboratorLookup: login's
// permission on repo (GET /repos/{owner}/{repo}/collaborators/{login}/permission)
// mapped by Association. Read is what every signed-in user has on a public
// repository, so for read Gitea is also asked whether login is a
// collaborator (GET /repos/{owner}/{repo}/collaborators/{login}): a
// stranger stays NONE.
func (r *Reporter) CollaboratorAssociation(ctx context.Context, repo, login string) (string, error) {
	p, err := r.Permission(ctx, repo, login)
	if err != nil {
		return "", err
	}
	collaborator := false
	if p == "read" {
		if collaborator, err = r.IsCollaborator(ctx, repo, login); err != nil {
			return "", err
		}
	}
	return Association(p, collaborator), nil
}

var _ workflows.CollaboratorLookup = (*Reporter)(nil)
