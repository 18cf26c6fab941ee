package workflows

import (
	"strings"
	"testing"
)

func TestMatchRepo(t *testing.T) {
	tests := []struct {
		pattern, repo string
		want          bool
	}{
		{"myorg/*", "myorg/app", true},
		{"myorg/*", "MyOrg/App", true}, // forges compare names case-insensitively
		{"MYORG/app", "myorg/APP", true},
		{"myorg/*", "myorg", false},
		{"myorg/*", "other/app", false},
		{"myorg/*", "myorgx/app", false},
		{"myorg/*", "evil/myorg/app", false},
		{"myorg/*", "myorg/sub/app", false}, // * never crosses /
		{"myorg/**", "myorg/sub/app", true}, // ** does
		{"myorg/**", "myorg/app", true},
		{"myorg/**", "myorg", false},
		{"myorg/**/app", "myorg/a/b/app", true},
		{"myorg/**/app", "myorg/a/b/other", false},
		{"**", "anyone/anything", true},
		{"**", "group/sub/project", true},
		{"**", "", false},
		{"group/*/project", "group/sub/project", true},
		{"group/*/project", "group/sub/deeper/project", false},
		{"myorg/app-*", "myorg/app-web", true},
		{"myorg/app-*", "myorg/app-", true},
		{"myorg/app-*", "myorg/web-app", false},
		{"myorg/*-svc", "myorg/pay-svc", true},
		{"myorg/a?c", "myorg/abc", true},
		{"myorg/a?c", "myorg/a/c", false},
		{"myorg/a?c", "myorg/ac", false},
		{"my*/*", "myorg/app", true},
		{"*/*", "a/b", true},
		{"*/*", "a/b/c", false},
		{"codertocat/hello-world", "Codertocat/Hello-World", true},
		{"codertocat/hello-world", "Codertocat/Hello-World2", false},
		{"myorg/app", "myorg/app/../../evil/x", false},
		// Malformed patterns match nothing.
		{"", "myorg/app", false},
		{"myorg", "myorg", false},
		{"myorg/***", "myorg/app", false},
		{"myorg/[ab]", "myorg/a", false},
		{"*", "myorg", false},
	}
	for _, tt := range tests {
		if got := MatchRepo(tt.pattern, tt.repo); got != tt.want {
			t.Errorf("MatchRepo(%q, %q) = %v, want %v", tt.pattern, tt.repo, got, tt.want)
		}
	}
	if !AnyRepo([]string{"a/*", "myorg/**"}, "myorg/x/y") || AnyRepo([]string{"a/*"}, "b/c") || AnyRepo(nil, "a/b") {
		t.Errorf("AnyRepo wrong")
	}
	// Many wildcards against a long path stay fast (no backtracking).
	long := strings.Repeat("a/", 100) + "b"
	if MatchRepo(strings.Repeat("**a", 40)+"/c", long) {
		t.Errorf("matched a path that does not end in /c")
	}
}

func TestCheckRepoPattern(t *testing.T) {
	tests := []struct {
		pattern, wantErr string
	}{
		{"myorg/*", ""},
		{"myorg/**", ""},
		{"group/sub/project", ""},
		{"my.org_x/app-1?", ""},
		{"**", ""},
		{"", "empty"},
		{"myorg", `want owner/name (e.g. "myorg/*")`},
		{"*", "no slash"},
		{"/myorg/app", "empty path segment"},
		{"myorg/", "empty path segment"},
		{"myorg//app", "empty path segment"},
		{"myorg/***", "more than two *"},
		{"myorg/[ab]", `contains '['`},
		{"myorg/a b", `contains ' '`},
		{"https://github.com/myorg/app", "empty path segment"},
		{"github.com:myorg/app", `contains ':'`},
		{strings.Repeat("a/", 200), "longer than 256"},
	}
	for _, tt := range tests {
		err := CheckRepoPattern(tt.pattern)
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("CheckRepoPattern(%q) = %v, want nil", tt.pattern, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("CheckRepoPattern(%q) = %v, want an error containing %q", tt.pattern, err, tt.wantErr)
		}
	}
}

func BenchmarkMatchRepo(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		MatchRepo("myorg/**/svc-*", "myorg/platform/team/svc-payments")
	}
}
