package gitea

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/hookrun/hookrun/providers/forge"
	"github.com/hookrun/hookrun/providers/internal/dialect"
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
	// API builds the REST client of the server's API root with Token
	// (Dialect's client: the composition root gives it, with the run link,
	// logger and transport it configures). Required with a token.
	API NewAPI
	// Webhook serves POST /hooks/gitea; X-Gitea-Signature is checked
	// against its WebhookSecrets.
	forge.Webhook
	// Labels remembers the labels last seen on each issue and pull
	// request, to tell a label_updated delivery that added a label
	// (labeled) from one that removed one (unlabeled). Optional: without
	// it such a delivery is labeled with LabelActionUnknown.
	Labels LabelMemory
}

// API is the REST client the forge reports, reviews, acts and looks up
// through: the client of the API Gitea's answers for everything hookrun
// calls (issue comments, commit statuses, comment reactions, pull requests
// and their files and reviews, labels, the current user), speaking it as
// Dialect says.
type API interface {
	forge.API
	// CollaboratorAssociation is a user's permission on a repository as
	// an author association (owner → OWNER, admin and write → MEMBER,
	// read → COLLABORATOR for a collaborator, else NONE).
	workflows.CollaboratorLookup
}

// NewAPI builds the API client of the REST root apiURL with token.
type NewAPI func(apiURL, token string) (API, error)

// Dialect is how Gitea's and Forgejo's API differs from the one it is
// modeled on, for the client the composition root builds (Config.API):
// "Authorization: token", no apps, label colors with '#', labels by id,
// assignees by editing the issue, no close reason, a compare answer per
// commit, and pull reviews read and posted review by review (the diff from
// pulls/{n}.diff, comments at new_position, suggestions as a fenced diff,
// a gone finding's comment edited through PATCH
// /repos/{o}/{r}/issues/comments/{id} to say "Fixed in <sha>").
func Dialect() *dialect.Dialect {
	return &dialect.Dialect{TokenScheme: "token", TokenOnly: true, LabelColorHash: true, LabelsByID: true,
		AssigneesByEdit: true, NoStateReason: true, NoCompareFiles: true, PullReviews: true}
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
	if c.API == nil {
		errs = append(errs, errors.New("gitea: no API client to report through (Config.API)"))
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
	return forge.OriginOf(u), nil
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
	API
}

// New checks cfg and returns a Reporter. No request is made yet.
func New(cfg Config) (*Reporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	api, _ := APIURL(cfg.BaseURL)
	c, err := cfg.API(api, cfg.Token)
	if err != nil {
		return nil, err
	}
	return &Reporter{API: c}, nil
}

// CollaboratorAssociation (workflows.CollaboratorLookup) is the API's:
// the permission a Gitea user has on a repository, as an author
// association.
var _ workflows.CollaboratorLookup = (*Reporter)(nil)
