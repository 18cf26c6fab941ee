package gitlab

import (
	"fmt"
	"net/url"
	"strings"
)

// GitOrigin is the origin, scheme://host[:port], that git clones from for
// the instance at baseURL ("" = gitlab.com): the instance's own host,
// whether baseURL is its root or its API root (.../api/v4/).
func GitOrigin(baseURL string) (string, error) {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("gitlab base_url %q: want an http(s) URL such as %s", baseURL, DefaultBaseURL)
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host), nil
}
