package gitlab

import "github.com/hookrun/hookrun/providers/forge"

// GitOrigin is the origin, scheme://host[:port], that git clones from for
// the instance at baseURL ("" = gitlab.com): the instance's own host,
// whether baseURL is its root or its API root (.../api/v4/).
func GitOrigin(baseURL string) (string, error) {
	u, err := forge.HTTPURL("gitlab base_url", baseURL, DefaultBaseURL)
	if err != nil {
		return "", err
	}
	return forge.OriginOf(u), nil
}
