package api

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestTheOpenAPIDocumentAndTheMuxAreOneTable(t *testing.T) {
	doc := OpenAPI()
	paths := doc["paths"].(map[string]any)
	t.Run("every route is documented with its scope", func(t *testing.T) {
		for _, rt := range routes {
			item, ok := paths[rt.path].(map[string]any)
			if !ok {
				t.Fatalf("%s is served but not documented", rt.pattern())
			}
			op, ok := item[strings.ToLower(rt.method)].(map[string]any)
			if !ok {
				t.Fatalf("%s is served but its method is not documented", rt.pattern())
			}
			if rt.scope != 0 && op["x-scope"] != rt.scope.String() {
				t.Errorf("%s: x-scope = %v, want %s", rt.pattern(), op["x-scope"], rt.scope)
			}
		}
	})
	t.Run("every documented operation is answered by a handler", func(t *testing.T) {
		h := newTestServer().Handler()
		n := 0
		for p, v := range paths {
			for method := range v.(map[string]any) {
				n++
				path := strings.NewReplacer("{id}", "x").Replace(p)
				// A cancelled request ends the event stream and waits at once.
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(strings.ToUpper(method), path, strings.NewReader(`{}`)).WithContext(ctx))
				var e Error
				_ = json.Unmarshal(rec.Body.Bytes(), &e)
				if rec.Code == http.StatusMethodNotAllowed || strings.HasPrefix(e.Error, "no such endpoint") {
					t.Errorf("%s %s is documented but not served: %d %s", method, p, rec.Code, rec.Body.String())
				}
			}
		}
		if n != len(routes) {
			t.Errorf("the document has %d operations, the table %d routes", n, len(routes))
		}
	})
	t.Run("the document is served as JSON at /openapi.json", func(t *testing.T) {
		rec := httptest.NewRecorder()
		newTestServer().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/openapi.json", nil))
		var got map[string]any
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got["openapi"] != "3.1.0" {
			t.Fatalf("%d %.200s", rec.Code, rec.Body.String())
		}
	})
}

// resolve follows a $ref into the document's components.
func resolve(doc map[string]any, s map[string]any) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		return doc["components"].(map[string]any)["schemas"].(map[string]any)[name].(map[string]any)
	}
	return s
}

func responseSchema(t *testing.T, doc map[string]any, method, path, status string) map[string]any {
	t.Helper()
	op := doc["paths"].(map[string]any)[path].(map[string]any)[method].(map[string]any)
	resp := op["responses"].(map[string]any)[status].(map[string]any)
	return resolve(doc, resp["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any))
}

// checkKeys: every key of the real object is a documented property, and
// every required property is there.
func checkKeys(t *testing.T, schema map[string]any, obj map[string]any) {
	t.Helper()
	props := schema["properties"].(map[string]any)
	for k := range obj {
		if _, ok := props[k]; !ok {
			t.Errorf("the answer has %q, which the schema does not document (it has %v)", k, slices.Sorted(maps.Keys(props)))
		}
	}
	req, _ := schema["required"].([]string)
	for _, k := range req {
		if _, ok := obj[k]; !ok {
			t.Errorf("the schema requires %q, which the answer lacks: %v", k, obj)
		}
	}
}

func TestDocumentedSchemasMatchRealAnswers(t *testing.T) {
	// Round-trip the document through JSON, as a client sees it.
	raw, _ := json.Marshal(OpenAPI())
	var doc map[string]any
	_ = json.Unmarshal(raw, &doc)
	// required comes back as []any; normalise for checkKeys.
	var fix func(v any)
	fix = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if r, ok := x["required"].([]any); ok {
				ss := make([]string, len(r))
				for i, s := range r {
					ss[i] = s.(string)
				}
				x["required"] = ss
			}
			for _, c := range x {
				fix(c)
			}
		case []any:
			for _, c := range x {
				fix(c)
			}
		}
	}
	fix(doc)
	h := newTestServer().Handler()
	do := func(method, path, body string) []byte {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		if rec.Code/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
		}
		return rec.Body.Bytes()
	}
	tests := []struct {
		name, method, path, body, status string
		list                             bool
	}{
		{"a session in GET /v1/sessions has the documented keys", "get", "/v1/sessions", "", "200", true},
		{"GET /healthz has the documented keys", "get", "/healthz", "", "200", false},
		{"GET /readyz has the documented keys", "get", "/readyz", "", "200", false},
		{"POST /v1/messages answers an Outbound as documented", "post", "/v1/messages", `{"to":"review","body":"hi"}`, "201", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := do(strings.ToUpper(tt.method), tt.path, tt.body)
			schema := responseSchema(t, doc, tt.method, tt.path, tt.status)
			var obj map[string]any
			if tt.list {
				var arr []map[string]any
				if err := json.Unmarshal(body, &arr); err != nil || len(arr) == 0 {
					t.Fatalf("want a non-empty list: %s", body)
				}
				obj = arr[0]
				schema = resolve(doc, schema["items"].(map[string]any))
			} else if err := json.Unmarshal(body, &obj); err != nil {
				t.Fatal(err)
			}
			checkKeys(t, schema, obj)
		})
	}
}

func TestTheReflectorFollowsEncodingJSON(t *testing.T) {
	type inner struct {
		A string `json:"a"`
	}
	type node struct {
		inner
		Name   string            `json:"name"`
		Opt    int               `json:"opt,omitempty"`
		Skip   string            `json:"-"`
		Next   *node             `json:"next,omitempty"`
		Tags   map[string]string `json:"tags"`
		hidden int
	}
	g := newSchemaGen()
	ref := g.schema(reflect.TypeFor[node]())
	s := g.defs["node"].(map[string]any)
	props := s["properties"].(map[string]any)
	tests := []struct {
		name string
		ok   bool
	}{
		{"a named struct is a $ref to a component", ref["$ref"] == "#/components/schemas/node"},
		{"an embedded struct's fields are flattened", props["a"] != nil},
		{"a json:\"-\" field is left out", props["Skip"] == nil && props["-"] == nil},
		{"an unexported field is left out", props["hidden"] == nil},
		{"a recursive pointer ends in a $ref", props["next"].(map[string]any)["$ref"] == "#/components/schemas/node"},
		{"omitempty fields are optional, the rest required", slices.Equal(s["required"].([]string), []string{"a", "name", "tags"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.ok {
				t.Fatalf("schema %v", s)
			}
		})
	}
	_ = node{}.hidden
}

func TestTheOpenAPIDocumentDescribesPromptKindsAndFullAnswers(t *testing.T) {
	raw, _ := json.Marshal(OpenAPI())
	var doc map[string]any
	_ = json.Unmarshal(raw, &doc)
	prompt := responseSchema(t, doc, "post", "/v1/permissions/{id}", "200")
	op := doc["paths"].(map[string]any)["/v1/permissions/{id}"].(map[string]any)["post"].(map[string]any)
	answer := resolve(doc, op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any))
	for schema, keys := range map[string][]string{"prompt": {"kind", "verbs", "suggestions", "questions"}, "answer": {"suggestions", "mode", "rules", "updated_input", "answers"}} {
		s := map[string]map[string]any{"prompt": prompt, "answer": answer}[schema]
		props := s["properties"].(map[string]any)
		for _, k := range keys {
			if _, ok := props[k]; !ok {
				t.Errorf("the %s schema has no %q (it has %v)", schema, k, slices.Sorted(maps.Keys(props)))
			}
		}
	}
}
