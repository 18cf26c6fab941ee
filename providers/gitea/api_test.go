package gitea

import "github.com/hookrun/hookrun/providers/github"

// testAPI is the API client internal/app gives: GitHub's client speaking
// Gitea's Dialect, linking runs under hookrun.example.
func testAPI(apiURL, token string) (API, error) {
	return github.New(github.Config{Forge: Name, Dialect: Dialect(), APIURL: apiURL, Token: token, RunURL: "https://hookrun.example/runs/{run}"})
}
