// Command fakewebhook stands in for adnanh/webhook in internal/bench's
// tests: it takes webhook's -hooks, -ip and -port flags, serves "OK" on /
// and each hook of the hooks.json on /hooks/<id>, evaluates the parts of
// its trigger rules that the bench writes ("and", "match" of type
// "payload-hmac-sha256" and "value", parameters from a header or a dotted
// payload path) and, when a delivery satisfies them, answers
// success-http-response-code and runs execute-command in
// command-working-directory without waiting for it; otherwise it answers
// trigger-rule-mismatch-http-response-code.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
)

type hook struct {
	ID           string `json:"id"`
	Command      string `json:"execute-command"`
	Dir          string `json:"command-working-directory"`
	SuccessCode  int    `json:"success-http-response-code"`
	MismatchCode int    `json:"trigger-rule-mismatch-http-response-code"`
	Rule         rule   `json:"trigger-rule"`
}

type rule struct {
	And   []rule `json:"and"`
	Match *struct {
		Type      string `json:"type"`
		Secret    string `json:"secret"`
		Value     string `json:"value"`
		Parameter struct {
			Source string `json:"source"`
			Name   string `json:"name"`
		} `json:"parameter"`
	} `json:"match"`
}

func (r rule) ok(req *http.Request, body []byte, payload map[string]any) bool {
	for _, sub := range r.And {
		if !sub.ok(req, body, payload) {
			return false
		}
	}
	m := r.Match
	if m == nil {
		return len(r.And) > 0
	}
	var got string
	switch m.Parameter.Source {
	case "header":
		got = req.Header.Get(m.Parameter.Name)
	case "payload":
		var v any = payload
		for _, k := range strings.Split(m.Parameter.Name, ".") {
			obj, _ := v.(map[string]any)
			v = obj[k]
		}
		got, _ = v.(string)
	default:
		return false
	}
	switch m.Type {
	case "payload-hmac-sha256":
		mac := hmac.New(sha256.New, []byte(m.Secret))
		mac.Write(body)
		return hmac.Equal([]byte(strings.TrimPrefix(got, "sha256=")), []byte(hex.EncodeToString(mac.Sum(nil))))
	case "value":
		return got == m.Value
	}
	return false
}

func main() {
	hooksPath := flag.String("hooks", "hooks.json", "hooks file")
	ip := flag.String("ip", "0.0.0.0", "ip")
	port := flag.String("port", "9000", "port")
	flag.Parse()
	data, err := os.ReadFile(*hooksPath)
	if err != nil {
		log.Fatal(err)
	}
	var hooks []hook
	if err := json.Unmarshal(data, &hooks); err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "OK") })
	for _, h := range hooks {
		mux.HandleFunc("/hooks/"+h.ID, func(w http.ResponseWriter, req *http.Request) {
			body, err := io.ReadAll(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			var payload map[string]any
			_ = json.Unmarshal(body, &payload)
			if !h.Rule.ok(req, body, payload) {
				w.WriteHeader(h.MismatchCode)
				fmt.Fprint(w, "Hook rules were not satisfied.")
				return
			}
			cmd := exec.Command(h.Command)
			cmd.Dir = h.Dir
			if err := cmd.Start(); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			go func() { _ = cmd.Wait() }()
			w.WriteHeader(h.SuccessCode)
		})
	}
	log.Fatal(http.ListenAndServe(net.JoinHostPort(*ip, *port), mux))
}
