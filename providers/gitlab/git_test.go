package gitlab

import "testing"

func TestGitOrigin(t *testing.T) {
	for in, want := range map[string]string{
		"":                                   "https://gitlab.com",
		"https://gitlab.com/":                "https://gitlab.com",
		"https://GitLab.example.com/api/v4/": "https://gitlab.example.com",
		"http://127.0.0.1:8929/gitlab/":      "http://127.0.0.1:8929",
	} {
		if got, err := GitOrigin(in); err != nil || got != want {
			t.Errorf("GitOrigin(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := GitOrigin("gitlab.example.com"); err == nil {
		t.Error("GitOrigin accepted a URL without a scheme")
	}
}
